"""The sans-IO core of a 9P client: tags, flush and version; requests in, bytes out; bytes in, events out.

No sockets, no trio: the blocking Client (client.py) and the async one
(anvilfs/aioclient) both drive this, so there is one codec path and one tag
logic. Everything that moves a tag from one state to another is here:

    a tag that is        on                            becomes        and receive_data gives
    free                 request(msg)                  waiting
    waiting              its reply                     free           Reply(tag, reply)
    waiting              flush(tag)                    flushing
    flushing             its reply (it raced the flush) answered      Reply(tag, reply)
    flushing             the Rflush                    free           Flushed(tag, replied=False)
    answered             the Rflush                    free           Flushed(tag, replied=True)

The Tflush has a tag of its own, waiting for its Rflush. A flushed tag stays
reserved until that Rflush, so a late reply can never be taken for the
reply to a new request (flush(5)). NOTAG belongs to the Tversion alone.

Anything else the server sends (a reply to a tag that is not waiting, a
reply of the wrong type, a request, a broken frame) fails closed with
RemoteProtocolError: the connection cannot be trusted further. Misuse of
this API (a request before the version, flushing a free tag) is
LocalProtocolError.
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
from dataclasses import dataclass

from ..ninep import Dialect, FrameBuffer, LocalProtocolError, RemoteProtocolError, Stat, decode, decode_stat, encode
from ..ninep import consts as c
from ..ninep import messages as m
from ..ninep.dialect import MIN_MSIZE
from ..ninep.messages.base import MESSAGE_TYPES
from .errors import ServerError

DEFAULT_MSIZE = 65536 + c.IOHDRSZ  # 64 KiB of data per read or write
_LAST_TAG = c.NOTAG - 1
_U16 = struct.Struct("<H")
_RLERROR = 7  # 9P2000.L's Rlerror: naming its class would make every 9P2000.L class (ninep/messages)


@dataclass(frozen=True, slots=True)
class Reply:
    """The reply to the request sent with `tag` (an Rerror too: see check())."""

    tag: int
    message: m.Message


@dataclass(frozen=True, slots=True)
class Flushed:
    """The Rflush for the flush of `oldtag` came; the tag is free again.

    replied: the old request's reply came first (and was given as a Reply);
    else the old request is as if never sent.
    """

    oldtag: int
    replied: bool


Event = Reply | Flushed


def check(reply: m.Message) -> m.Message:
    """The reply itself, or ServerError with the server's text for an Rerror (Rlerror: its errno)."""
    if isinstance(reply, m.Rerror):
        raise ServerError(reply.ename)
    if reply.TYPE == _RLERROR:
        raise ServerError(f"errno {reply.ecode}")
    return reply


def made_fid(request: m.Message, reply: m.Message) -> int | None:
    """The fid a successful reply made on the server, if any: what a caller that gave up must clunk.

    Only a whole Twalk to a new fid makes one here (a client that never
    sends Tauth or 9P2000.L creates); a partial walk makes none (walk(5)).
    """
    if (isinstance(request, m.Twalk) and isinstance(reply, m.Rwalk) and request.newfid != request.fid
            and len(reply.wqids) == len(request.wnames)):
        return request.newfid
    return None


def directory_entries(data: bytes, dialect: Dialect) -> list[Stat]:
    """The stat records a 9P2000 directory read gives, one after another (read(5))."""
    entries, pos = [], 0
    while pos < len(data):
        size = _U16.unpack_from(data, pos)[0] + 2
        entries.append(decode_stat(data[pos:pos + size], dialect))
        pos += size
    return entries


class ClientProtocol:
    """One client connection's protocol state. Feed it the bytes that arrive; send the bytes it returns."""

    def __init__(self, dialect: Dialect = Dialect.P2000, msize: int = DEFAULT_MSIZE):
        if msize < MIN_MSIZE:
            raise LocalProtocolError(f"msize {msize} is too small: offer at least {MIN_MSIZE}")
        self.dialect = dialect
        self.msize = msize  # offered until the Rversion, then the negotiated one
        self.versioned = False
        self._frames = FrameBuffer(msize)
        self._waiting: dict[int, int] = {}  # tag -> the reply type its request expects
        self._flushes: dict[int, int] = {}  # tag of a Tflush -> the tag it flushes
        self._flushing: dict[int, int] = {}  # a flushed tag -> the tag of its Tflush
        self._next_tag = 1
        self._fids = itertools.count(1)

    @property
    def iounit(self) -> int:
        """The most data one Tread or Twrite can carry."""
        return self.msize - c.IOHDRSZ

    def busy_tags(self) -> frozenset[int]:
        """Tags that a new request may not take: waiting for a reply, or for the Rflush of their flush."""
        return frozenset(self._waiting) | frozenset(self._flushing)

    def new_fid(self) -> int:
        """A fid number never used before on this connection."""
        return next(self._fids)

    # ------------------------------------------------------------ sending

    def version_request(self) -> bytes:
        """The Tversion that starts the connection; its Rversion sets msize (version(5))."""
        if self.versioned or self._waiting:
            raise LocalProtocolError("Tversion goes first, once: a second one would abort every request in flight")
        self._waiting[c.NOTAG] = m.Rversion.TYPE
        return encode(m.Tversion(tag=c.NOTAG, msize=self.msize, version=self.dialect.value), self.dialect)

    def request(self, msg: m.Message) -> tuple[int, bytes]:
        """A free tag for `msg` (whatever tag it has) and the frame to send."""
        if not self.versioned:
            raise LocalProtocolError("no version negotiated yet: send version_request() and feed its Rversion first")
        if not msg.is_request or isinstance(msg, m.Tversion | m.Tflush):
            raise LocalProtocolError(f"{type(msg).__name__} cannot go through request(): "
                                     "send requests other than Tversion (version_request) and Tflush (flush)")
        tag = self._free_tag()
        frame = encode(dataclasses.replace(msg, tag=tag), self.dialect)  # before the tag is taken: it may raise
        self._waiting[tag] = msg.TYPE + 1
        return tag, frame

    def flush(self, tag: int) -> bytes:
        """A Tflush of the request `tag`; the tag stays reserved until the Rflush."""
        if tag not in self._waiting or tag == c.NOTAG or tag in self._flushes:
            raise LocalProtocolError(f"tag {tag} has no request waiting for its reply: nothing to flush")
        if tag in self._flushing:
            raise LocalProtocolError(f"tag {tag} is being flushed already: wait for its Flushed event")
        ftag = self._free_tag()
        frame = encode(m.Tflush(tag=ftag, oldtag=tag), self.dialect)
        self._waiting[ftag] = m.Rflush.TYPE
        self._flushes[ftag] = tag
        self._flushing[tag] = ftag
        return frame

    def _free_tag(self) -> int:
        """Round robin from the last tag given, so a tag is not reused as soon as it is free."""
        for _ in range(c.NOTAG):
            tag = self._next_tag
            self._next_tag = tag + 1 if tag < _LAST_TAG else 0
            if tag not in self._waiting and tag not in self._flushing:
                return tag
        raise LocalProtocolError(f"no free tag: {c.NOTAG} requests are in flight; wait for some replies")

    # ------------------------------------------------------------ receiving

    def receive_data(self, data: bytes) -> list[Event]:
        """The events the bytes complete, in the order they came (b"" is no data, not end of stream)."""
        self._frames.feed(data)
        events = []
        while (frame := self._frames.next_frame()) is not None:
            events.append(self._receive(decode(frame, self.dialect)))
        return events

    def _receive(self, msg: m.Message) -> Event:
        tag = msg.tag
        if msg.is_request:
            raise RemoteProtocolError(f"the server sent a request, {type(msg).__name__} (tag {tag}): "
                                      "a 9P server only replies")
        expected = self._waiting.get(tag)
        if expected is None:
            raise RemoteProtocolError(f"the server sent {type(msg).__name__} for tag {tag}, which has no request waiting")
        if msg.TYPE != expected and not (_is_error(msg) and expected != m.Rflush.TYPE):
            raise RemoteProtocolError(f"the server answered tag {tag} with {type(msg).__name__}: "
                                      f"the request wants {MESSAGE_TYPES[expected].__name__} or an error")
        del self._waiting[tag]
        if expected == m.Rflush.TYPE:
            oldtag = self._flushes.pop(tag)
            del self._flushing[oldtag]
            replied = self._waiting.pop(oldtag, None) is None
            return Flushed(oldtag, replied)
        if expected == m.Rversion.TYPE and tag == c.NOTAG:
            self._accept_version(msg)
        return Reply(tag, msg)

    def _accept_version(self, reply: m.Message) -> None:
        if _is_error(reply):
            return  # check() raises it
        if reply.version != self.dialect.value:
            raise ServerError(f"server does not speak {self.dialect.value} (answered {reply.version})")
        if not MIN_MSIZE <= reply.msize <= self.msize:
            raise RemoteProtocolError(f"the server's Rversion msize {reply.msize} is outside {MIN_MSIZE}..{self.msize}, "
                                      "what the client offered")
        self.msize = self._frames.max_size = reply.msize
        self.versioned = True


def _is_error(msg: m.Message) -> bool:
    return msg.TYPE == m.Rerror.TYPE or msg.TYPE == _RLERROR
