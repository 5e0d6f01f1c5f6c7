"""One client connection: the only place where 9P meets trio.

Requests are answered inline as their frames arrive, and the replies of one
received batch go out in one send. Every request takes one path: its
frame's fields, read by the dialect's field reader
(``Codec.fields``), go to the dispatcher's handler for its type, or to the
connection's own for Tversion and Tflush; the tags in flight, the flush
order and the version reset are the sans-IO core's (ninep/serving.py).
While a request is pending (a parked read, a deferred clunk, a flush) each
frame is decoded first, for the core's rules on tags and fids. Unsent replies are bounded:
once they pass ``Limits.max_unsent`` the loop stops handling frames (they
stay in the frame buffer, and the socket is not read) until the replies are
sent. Work is bounded in time too: a client that pipelines many requests,
or keeps the socket full, is served for ``TURN`` seconds before the loop
lets every other task run (each request is answered where it stands in the
batch; only the rest waits). Reads that wait, clunks whose prompt is on its way to disk, and the
flushes of them are answered later, in tasks (parked.py).
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import time
from collections.abc import Callable

import trio

from ..ninep import BadMessage, Dialect, FrameBuffer, FramingError, LocalProtocolError, codec_for, format_message
from ..ninep import messages as m
from ..ninep.messages.base import MESSAGE_TYPES
from ..ninep.compiled import NotWellFormed
from ..ninep.serving import ServerProtocol
from ..tree import Directory
from .dispatch import Blocked, Dispatcher, Limits
from .parked import ParkedRequests
from .state import Deferred
from .token import PLAIN_ANAMES, Token
from .transport import transport_for

log = logging.getLogger("anvilfs.server")

# How long one connection's task may hold the event loop with requests that are all there to be answered
# (the socket keeps having more, or one receive held a thousand): the web opening on 1,000 sessions sent
# 4,000 requests at once and held every other client for 0.24 s in one step (issue 32: no stall over 20 ms).
TURN = 0.004


class Connection(ParkedRequests):
    """Serves one stream until the peer hangs up or breaks framing."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        root: Directory,
        *,
        limits: Limits = Limits(),
        trace: Callable[[str], None] | None = None,
        on_error: Callable[[str, str], None] = lambda where, text: None,
        name: str = "conn",
        token: Token | None = None,  # the aname an attach must present (TCP), or None
    ):
        self.stream = stream
        self.io = transport_for(stream)
        self.name = name
        self.limits = limits
        self.dispatcher = Dispatcher(root, limits, on_error=on_error, token=token)
        self.frames = FrameBuffer(limits.max_msize)
        self.core = ServerProtocol()
        self.tags = self.core.tags  # pending requests by tag: empty unless a read waits or a clunk is deferred
        self.trace = trace
        self._out = bytearray()
        self._out_ready = trio.Event()
        self._sending = False  # a task is in send_all; what others add, it sends too
        self._sent = trio.Event()  # set when that task has sent everything, if someone waits for it
        self._room_waiters = 0  # tasks in _wait_room: without them a send need not set (and renew) _sent
        self._in_batch = False  # replies made while handling a batch go out with it
        self._turn_ends = float("inf")  # the receive loop's: when this connection lets the others run
        self._nursery: trio.Nursery | None = None
        self._codec = codec_for(Dialect.P2000)  # the negotiated dialect's, from each Tversion on
        self._table: list[tuple] = [_UNKNOWN] * 256  # wire type -> (its field reader, its handler)
        self._set_table()

    @property
    def dialect(self) -> Dialect:
        return self.dispatcher.dialect or Dialect.P2000

    # ------------------------------------------------------------ replies

    def send(self, reply: m.Message | bytes) -> None:
        """Queue a reply: a message, or a frame the dispatcher encoded already (the replies every read makes)."""
        if type(reply) is bytes:
            frame = reply
            sent = self._codec.decode(frame) if self.trace else None
        else:
            codec, sent = self._codec, reply
            try:
                frame = codec.encode(reply)
            except LocalProtocolError as exc:  # a reply we cannot encode is our bug: say so, keep serving
                log.exception("%s: cannot encode %s", self.name, type(reply).__name__)
                sent = self.dispatcher.error(type(reply), reply._values(), f"internal error: {exc}", errno.EIO)
                frame = codec.encode(sent)
        if self.trace:  # after the encoding: a reply that could not be encoded is traced as the error sent instead
            self.trace(f"{self.name} <- {format_message(sent, data_limit=64)}")
        self._out += frame
        if not self._in_batch:
            self._out_ready.set()

    def _has_room(self) -> bool:
        return len(self._out) <= self.limits.max_unsent

    async def _wait_room(self) -> None:
        """A client that does not read its replies is not read (nor answered) further."""
        while not self._has_room():
            self._room_waiters += 1
            try:
                await self._sent.wait()  # whoever is sending sets it once everything went out
            finally:
                self._room_waiters -= 1

    async def _flush_out(self) -> None:
        if self._sending:
            if not self._has_room():
                await self._wait_room()
            return  # the sending task takes what was added, in order
        self._sending = True
        try:
            while self._out:
                data, self._out = self._out, bytearray()  # handed over whole: nothing appends to it any more
                await self.io.send_all(data)
        finally:
            self._sending = False
            self._sent_all()

    def _send_now(self) -> bool:
        """Send the unsent replies without an await, if the socket takes them all (it nearly always
        does); False if some are left, for _flush_out."""
        if self._sending:
            return False  # the sending task takes them, in order
        sent = self.io.send_nowait(self._out)
        if sent < len(self._out):
            del self._out[:sent]
            return False
        self._out.clear()
        self._sent_all()
        return True

    def _sent_all(self) -> None:
        if self._room_waiters:  # else no Event to set and make anew at every send, for nobody
            self._sent.set()
            self._sent = trio.Event()

    async def _writer(self) -> None:
        """Sends the replies that tasks (blocked reads) make outside a batch."""
        while True:
            await self._out_ready.wait()
            self._out_ready = trio.Event()
            await self._flush_out()

    # ------------------------------------------------------------ the loop

    async def serve(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._writer)
                await self._receive_loop()
                nursery.cancel_scope.cancel()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.dispatcher.reset()
            with trio.CancelScope(shield=True):
                await self.io.aclose()

    async def _receive_loop(self) -> None:
        self.io.loop_began()  # this task is a receive loop: it may read ahead (transport.PassWatch)
        try:
            await self._receive()
        finally:
            self.io.loop_ended()

    async def _receive(self) -> None:
        io, clock = self.io, time.perf_counter
        self._turn_ends = clock() + TURN
        while True:
            if clock() > self._turn_ends:
                await self._give_turn()
            data = io.receive_nowait()  # an await only when the socket has nothing yet
            if data is None:
                data = await io.receive()
                self._turn_ends = clock() + TURN
            if not data:
                return
            try:
                while self._handle_frames(data):  # too much unsent, or the turn is over
                    await self._give_turn()  # the replies so far go out before the rest of the batch
                    data = b""
            except FramingError as exc:
                log.warning("%s: closing connection: %s", self.name, exc)
                self.dispatcher.on_error(self.name, f"connection closed: {exc}")
                await self._flush_out()  # what was answered before the broken frame still goes out
                return
            if self._out and not self._send_now():
                await self._flush_out()  # the whole batch's replies in one send

    async def _give_turn(self) -> None:
        """Send what is unsent, and let every other task run before this connection goes on."""
        await self._flush_out()
        await trio.lowlevel.checkpoint()  # the flush may not have waited at all
        self._turn_ends = time.perf_counter() + TURN

    def _handle_frames(self, data: bytes) -> bool:
        """Handle the frames `data` completes; True if it stopped early because the unsent replies passed
        the limit or this connection's turn (TURN) is over (the rest stay buffered: call again with b"")."""
        self._in_batch = True
        limit, tags, flushing, traced = self.limits.max_unsent, self.core.tags, self.core.flushing, self.trace is not None
        clock, turn_ends = time.perf_counter, self._turn_ends
        table = self._table
        out = self._out  # the same bytearray all through the loop: only an await (_flush_out) replaces it
        try:
            for frame in self.frames.split(data):
                if tags or flushing or traced:  # the core's rules apply, or the trace shows the message
                    self._handle_decoded(frame)
                else:
                    try:  # the table changes in place with a Tversion: it holds from the next frame
                        read, handler = table[frame[4]]
                        reply = handler(*read(frame))  # the frame's fields, handed to its handler
                    except Exception as exc:
                        reply = self._refused(frame, exc)
                    if type(reply) is bytes:
                        out += reply
                    elif reply is not None:
                        self._queue(reply)
                if len(out) > limit or clock() > turn_ends:  # _has_room, without a call per frame
                    return True
            return False
        finally:
            self._in_batch = False

    def _refused(self, frame: bytes, exc: Exception):
        """The reply to a frame whose handling raised `exc`: decoded again (rare), it names what was wrong
        with the frame (BadMessage), or the refusal of its request. FramingError if it has no tag."""
        try:
            msg = self._codec.decode(frame)
        except BadMessage as bad:
            return self._bad_message(bad)
        return self.dispatcher.refusal(type(msg), msg._values(), exc)

    def _bad_message(self, exc: BadMessage) -> m.Message:
        if exc.tag is None:
            raise FramingError(exc.reason) from None
        return self.dispatcher.error_for(exc.tag, "a message that does not decode", exc.reason, errno.EINVAL)

    def _handle_decoded(self, frame: bytes) -> None:
        """A frame while some request is pending, or under a trace: decoded, then the core's rules on its tag
        and fid, then the same handler."""
        try:
            msg = self._codec.decode(frame)
        except BadMessage as exc:
            self.send(self._bad_message(exc))
            return
        if self.trace:
            self.trace(f"{self.name} -> {format_message(_for_trace(msg), data_limit=64)}")
        kind, fields = type(msg), msg._values()
        if kind is not m.Tflush and msg.is_request and self.core.in_flight(msg.tag):
            self.send(self.dispatcher.error(kind, fields, f"tag {msg.tag} is already in flight: use another tag", errno.EINVAL))
            return
        if kind in _ENDS_READS and self.core.tags:
            self.core.ends_with_fid(msg.fid)
        try:
            reply = self._table[msg.TYPE][1](*fields)
        except Exception as exc:
            reply = self.dispatcher.refusal(kind, fields, exc)
        if reply is not None:
            self._queue(reply)

    def _queue(self, reply: m.Message | bytes | Blocked | Deferred) -> None:
        """Queue the reply a request got at once, or start the task of one answered later."""
        kind = type(reply)
        if kind is bytes and self._in_batch and not self.trace:
            self._out += reply  # what send() does with a frame in a batch, without the call
        elif kind is Deferred:
            self._start_deferred(reply)
        elif kind is not Blocked:
            self.send(reply)
        elif len(self.core.tags) >= self.limits.max_blocked_reads:
            self.send(self.dispatcher.blocked_read_failed(reply, _too_many_blocked(self.limits.max_blocked_reads), errno.EMFILE))
        else:
            self._start_blocked(reply)

    def _set_table(self) -> None:
        """What answers each request in the dialect now agreed: the dispatcher's handlers, and this
        connection's own for the two that act on the requests in flight (Tversion, Tflush)."""
        handlers = self.dispatcher.handlers()
        handlers[m.Tversion.TYPE], handlers[m.Tflush.TYPE] = self._version, self._flush
        codec = self._codec
        self._table[:] = [_UNKNOWN] * 256  # in place: the frame loop holds it
        for t, handler in handlers.items():
            self._table[t] = (codec.fields(MESSAGE_TYPES[t]), handler)

    def _version(self, tag: int, msize: int, version: str) -> None:
        """A Tversion resets the session: nothing in flight is answered, and the new msize and dialect
        hold from the next frame (its reply is the same in every dialect)."""
        self._cancel_all()
        try:
            self.send(self.dispatcher.version(tag, msize, version))
        except Exception as exc:
            self.send(self.dispatcher.refusal(m.Tversion, (tag, msize, version), exc))
        self._codec = codec_for(self.dialect)
        self._set_table()
        self.frames.max_size = self.dispatcher.msize


_ENDS_READS = frozenset((m.Tclunk, m.Tremove))  # the fid's blocked reads end with it


def _unknown_type(frame: bytes) -> tuple:
    raise NotWellFormed("no message of this type")  # decoded again, the frame's refusal names its type


_UNKNOWN = (_unknown_type, None)  # a type byte of no message of the dialect


def _too_many_blocked(limit: int) -> str:
    return f"too many blocked reads: at most {limit} wait at once per connection; flush some or wait for their answers"


def _for_trace(msg: m.Message) -> m.Message:
    """A message as the trace may show it: an attach's aname can be the TCP token, a secret."""
    if getattr(msg, "aname", "") not in PLAIN_ANAMES:  # Tattach, and Tauth (plan9port sends one first)
        return dataclasses.replace(msg, aname="(hidden: it may be the token)")
    return msg
