"""The requests that look at or change a file's attributes, and the ones answered the same for every file.

A part of the Dispatcher (dispatch.py), which it is mixed into: each
method takes the request and returns its reply, or raises what refuses it,
and finds the fid in the Dispatcher's table.
"""

from __future__ import annotations

import errno

from ..errors import InvalidRequest, NotPermitted
from ..ninep import RequestError
from ..ninep import consts as c
from ..ninep import messages as m
from ..ninep.fids import FidTable
from .attrs import getattr_of, length_of, mode_of, stat_of
from .state import Fid


class AttributeRequests:
    __slots__ = ()
    fids: FidTable

    def stat(self, msg: m.Tstat) -> m.Message:
        fid = self.fids.get(msg.fid)
        return m.Rstat(tag=msg.tag, stat=stat_of(fid.node, length_of(fid.node, fid.handle)))

    def wstat(self, msg: m.Twstat) -> m.Message:
        fid = self.fids.get(msg.fid)
        s, node = msg.stat, fid.node
        if s.name and s.name != node.name:
            raise NotPermitted(f"{node.name} cannot be renamed")
        if s.mode != 0xFFFFFFFF and s.mode != mode_of(node):
            raise NotPermitted(f"the mode of {node.name} cannot be changed")
        self._truncate(fid, s.length, 0xFFFFFFFFFFFFFFFF)
        return m.Rwstat(tag=msg.tag)

    def getattr(self, msg: m.Tgetattr) -> m.Message:
        fid = self.fids.get(msg.fid)
        return m.Rgetattr(msg.tag, *getattr_of(fid.node, length_of(fid.node, fid.handle)))

    def setattr(self, msg: m.Tsetattr) -> m.Message:
        fid = self.fids.get(msg.fid)
        if msg.valid & (c.SETATTR_MODE | c.SETATTR_UID | c.SETATTR_GID):
            raise NotPermitted(f"the mode and owner of {fid.node.name} cannot be changed")
        if msg.valid & c.SETATTR_SIZE:
            self._truncate(fid, msg.size, None)
        return m.Rsetattr(tag=msg.tag)

    def _truncate(self, fid: Fid, length: int, dont_touch: int | None) -> None:
        """A change of length: to 0, accepted and ignored (SPEC §4); to the length a stat gives, no change."""
        if length == dont_touch:
            return
        if length != 0:
            now = length_of(fid.node, fid.handle)
            if length == now:  # a stat's record sent back with another change in it
                return
            raise InvalidRequest(f"{fid.node.name}: a length of {length} cannot be set: only truncation to 0 "
                                 f"is accepted (and ignored), or the length it has ({now})")
        if fid.node.is_dir:
            raise RequestError(f"{fid.node.name} is a directory", errno.EISDIR)
        if fid.handle is not None:
            fid.handle.truncate()

    def statfs(self, msg: m.Tstatfs) -> m.Message:
        self.fids.get(msg.fid)
        return m.Rstatfs(tag=msg.tag, type=0x01021997, bsize=4096, namelen=255)

    # ------------------------------------------------------------ the rest

    def fsync(self, msg: m.Tfsync) -> m.Message:
        self.fids.get(msg.fid)
        return m.Rfsync(tag=msg.tag)

    def lock(self, msg: m.Tlock) -> m.Message:
        self.fids.get(msg.fid)
        return m.Rlock(tag=msg.tag, status=0)  # nothing to lock: every lock is granted

    def getlock(self, msg: m.Tgetlock) -> m.Message:
        self.fids.get(msg.fid)
        return m.Rgetlock(tag=msg.tag, type=2, start=msg.start, length=msg.length, proc_id=msg.proc_id, client_id=msg.client_id)

    def xattrwalk(self, msg: m.Txattrwalk) -> m.Message:
        self.fids.get(msg.fid)
        raise RequestError("synthetic files have no extended attributes", errno.EOPNOTSUPP)

    def readlink(self, msg: m.Treadlink) -> m.Message:
        raise RequestError(f"{self.fids.get(msg.fid).node.name} is not a symbolic link", errno.EINVAL)

    def refuse_change(self, msg: m.Message) -> m.Message:
        raise NotPermitted(f"{type(msg).__name__[1:]}: the tree of anvilfs cannot be changed that way; use the ctl files")
