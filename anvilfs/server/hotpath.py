"""The requests of every file read, answered straight from their frames.

A poll of status files is walk, open, read and clunk, over and over; on the
message path each costs a decode into a message, a dispatch on its class,
a handler and its generic checks, then an encode (issue 11: more Python a
request than the socket costs). Here those four (Twalk,
Topen or Tlopen, Tread, Tclunk), and the Tgetattr with which Linux stats
every file it opens, are answered from the frame's bytes: one ``struct``
call for the fields, the same checks, and the reply packed at once.

It is a shortcut, never a second set of rules. A function here answers only
the plain case: a frame of the exact size, a walk that reaches its end, a
fid that is there and open as it must be, nothing in flight. For anything
else it returns None *before changing anything*, and the connection hands
the frame to the message path, which decodes it again and answers it, error
texts and all. What it does run (opening a file, reading it, clunking it) is
the dispatcher's own code, and an exception there is turned into its reply
by the dispatcher's own `refusal`. tests/wire/test_hotpath.py runs the same
requests down both paths and compares every reply and the fids left.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ..ninep import Dialect, RequestError, codec_for, frame_maker
from ..ninep import consts as c
from ..ninep import messages as m
from ..tree import Directory
from .attrs import getattr_of, length_of, packed_qid
from .dispatch import Dispatcher
from .opening import linux_access, open_fid, plan9_access
from .state import Deferred, Fid

# What each request's frame is after its header (size[4] type[1] tag[2]).
_WALK = struct.Struct("<IBHIIH")  # fid newfid nwname, then the names
_LOPEN = struct.Struct("<IBHII")  # fid flags
_OPEN = struct.Struct("<IBHIB")  # fid mode
_READ = struct.Struct("<IBHIQI")  # fid offset count
_CLUNK = struct.Struct("<IBHI")  # fid
_GETATTR = struct.Struct("<IBHIQ")  # fid request_mask
_U16 = struct.Struct("<H")
_RWALK = struct.Struct("<IBHH")  # nwqid, then the qids
_HEAD = struct.Struct("<IBH")  # size type tag: an Rclunk whole, an Ropen's or Rlopen's before its qid and iounit
_U32 = struct.Struct("<I")
_RWALK_TYPE, _ROPEN_TYPE, _RLOPEN_TYPE = m.Rwalk.TYPE, m.Ropen.TYPE, m.Rlopen.TYPE
_RCLUNK_TYPE = m.Rclunk.TYPE
_RREAD = frame_maker(m.Rread)  # (tag, data) -> the frame, or the message if the data cannot be encoded
_RGETATTR = frame_maker(m.Rgetattr)  # (tag, *its fields): the same, for Linux's stat of every file it opens

Answer = Callable[[bytes], object]  # a frame -> its reply (as Dispatcher.handle returns it), or None


class HotPath:
    """The frame-level answers of one connection's dispatcher, by the request's type byte."""

    def __init__(self, dispatcher: Dispatcher):
        self.d = dispatcher
        self._fids = dispatcher.fids.by_number
        self._decode = codec_for(Dialect.P2000).decode

    def table(self, dialect: Dialect | None) -> dict[int, Answer]:
        """What can be answered from the frame in `dialect` (none before a version is agreed)."""
        if dialect is None:
            return {}
        self._decode = codec_for(dialect).decode  # for the rare answer that needs the message
        table: dict[int, Answer] = {m.Twalk.TYPE: self.walk, m.Tread.TYPE: self.read, m.Tclunk.TYPE: self.clunk}
        if dialect is Dialect.P2000L:
            table[m.Tlopen.TYPE] = self.lopen
            table[m.Tgetattr.TYPE] = self.getattr
        else:
            table[m.Topen.TYPE] = self.open
        return table

    def _refusal(self, frame: bytes, exc: Exception):
        return self.d.refusal(self._decode(frame), exc)

    # ------------------------------------------------------------ walk

    def walk(self, frame: bytes):
        size = len(frame)
        if size < 17:
            return None
        _, _, tag, number, newnumber, nwname = _WALK.unpack_from(frame)
        fid = self._fids.get(number)
        if fid is None or fid.handle is not None or nwname > c.MAXWELEM:
            return None
        if newnumber != number:
            try:
                self.d.fids.check_free(newnumber)
            except RequestError:
                return None  # in use, NOFID, or past the limit: the message path says which
        trail, qids, pos = fid.trail, b"", 17
        try:
            for _ in range(nwname):
                n = _U16.unpack_from(frame, pos)[0]
                pos += 2
                if pos + n > size:
                    return None
                name = frame[pos:pos + n].decode()
                pos += n
                node = trail[-1]
                if not isinstance(node, Directory) or name in ("..", ".", ""):
                    return None  # the message path walks these (and refuses the last)
                child = node.lookup(name)
                if child is None:
                    return None  # a walk that stops short: the message path says where
                trail += (child,)
                qids += packed_qid(child)
        except Exception:  # a frame that does not parse, a lookup or a stamp that raises: nothing changed yet,
            return None  # and the message path answers it, or refuses it as it must
        if pos != size:
            return None
        self._fids[newnumber] = Fid(trail, fid.caller)  # checked free above (or it is the walked fid itself)
        return _RWALK.pack(9 + len(qids), _RWALK_TYPE, tag, nwname) + qids

    # ------------------------------------------------------------ open

    def lopen(self, frame: bytes):
        if len(frame) != _LOPEN.size:
            return None
        _, _, tag, number, flags = _LOPEN.unpack(frame)
        read, write = linux_access(flags)
        return self._open(frame, tag, number, read, write, bool(flags & c.L_O_TRUNC) and write, _RLOPEN_TYPE)

    def open(self, frame: bytes):
        if len(frame) != _OPEN.size:
            return None
        _, _, tag, number, mode = _OPEN.unpack(frame)
        if mode & c.ORCLOSE:
            return None
        read, write = plan9_access(mode)
        return self._open(frame, tag, number, read, write, bool(mode & c.OTRUNC), _ROPEN_TYPE)

    def _open(self, frame: bytes, tag: int, number: int, read: bool, write: bool, trunc: bool, rtype: int):
        fid = self._fids.get(number)
        if fid is None:
            return None
        try:
            open_fid(fid, read, write, trunc)  # changes nothing when it refuses
            qid = packed_qid(fid.node)
        except Exception as exc:
            return self._refusal(frame, exc)
        return _HEAD.pack(24, rtype, tag) + qid + _U32.pack(self.d.iounit)

    # ------------------------------------------------------------ read

    def read(self, frame: bytes):
        if len(frame) != _READ.size:
            return None
        _, _, tag, number, offset, count = _READ.unpack(frame)
        fid = self._fids.get(number)
        if fid is None or not fid.can_read or fid.can_write or fid.listing is not None:
            return None  # directories, and files open for writing too (read-back), go the message path
        handle = fid.handle
        try:
            if handle.blocking and not handle.ready(offset):
                return None  # a read that waits: the message path parks it
        except Exception:
            return None  # the message path refuses it
        try:
            data = self.d.take(handle, offset, min(count, self.d.iounit))
        except Exception as exc:
            return self._refusal(frame, exc)
        return _RREAD(tag, data)  # the data is taken: a reply that cannot be encoded is the message path's error

    # ------------------------------------------------------------ clunk

    def clunk(self, frame: bytes):
        if len(frame) != _CLUNK.size:
            return None
        _, _, tag, number = _CLUNK.unpack(frame)
        fid = self._fids.pop(number, None)
        if fid is None:
            return None
        reply = _HEAD.pack(7, _RCLUNK_TYPE, tag)
        try:
            later = self.d.close(fid)
        except Exception as exc:
            return self._refusal(frame, exc)
        if later is not None:  # a prompt: answered once it is on disk
            return Deferred(later, self._decode(frame), reply)
        return reply

    # ------------------------------------------------------------ getattr (9P2000.L)

    def getattr(self, frame: bytes):
        if len(frame) != _GETATTR.size:
            return None
        _, _, tag, number, _ = _GETATTR.unpack(frame)
        fid = self._fids.get(number)
        if fid is None:
            return None
        node = fid.node
        try:
            values = getattr_of(node, length_of(node, fid.handle))
        except Exception:  # a stamp or a render that raises: nothing changed, and the message path refuses it
            return None
        return _RGETATTR(tag, *values)
