"""The requests that look at or change a file's attributes, and the ones answered the same for every file.

A part of the Dispatcher (dispatch.py), which it is mixed into: each
method takes the request and returns its reply, or raises what refuses it,
and finds the fid in the Dispatcher's table. A handler takes the request's
fields in order, the tag first (dispatch.py says why).
"""

from __future__ import annotations

import errno

from ..errors import InvalidRequest, NotPermitted
from ..ninep import RequestError, frame_maker
from ..ninep import consts as c
from ..ninep import messages as m
from ..ninep.fids import FidTable
from .attrs import getattr_of, length_of, mode_of, stat_of
from .state import Fid


class AttributeRequests:
    __slots__ = ()
    fids: FidTable
    _fids: dict  # fids.by_number

    def stat(self, tag: int, fid: int) -> m.Message:
        fid = self.fids.get(fid)
        return m.Rstat(tag=tag, stat=stat_of(fid.node, length_of(fid.node, fid.handle)))

    def wstat(self, tag: int, fid: int, stat) -> m.Message:
        fid = self.fids.get(fid)
        s, node = stat, fid.node
        if s.name and s.name != node.name:
            raise NotPermitted(f"{node.name} cannot be renamed")
        if s.mode != 0xFFFFFFFF and s.mode != mode_of(node):
            raise NotPermitted(f"the mode of {node.name} cannot be changed")
        self._truncate(fid, s.length, 0xFFFFFFFFFFFFFFFF)
        return m.Rwstat(tag=tag)

    def getattr(self, tag: int, number: int, request_mask: int) -> bytes | m.Message:
        if (fid := self._fids.get(number)) is None:  # Linux stats every file it opens: a dict lookup inline
            fid = self.fids.get(number)
        node = fid.node
        return _RGETATTR(tag, *getattr_of(node, length_of(node, fid.handle)))

    def setattr(self, tag: int, fid: int, valid: int, mode: int, uid: int, gid: int, size: int, *times: int) -> m.Message:
        fid = self.fids.get(fid)
        if valid & (c.SETATTR_MODE | c.SETATTR_UID | c.SETATTR_GID):
            raise NotPermitted(f"the mode and owner of {fid.node.name} cannot be changed")
        if valid & c.SETATTR_SIZE:
            self._truncate(fid, size, None)
        return m.Rsetattr(tag=tag)

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

    def statfs(self, tag: int, fid: int) -> m.Message:
        self.fids.get(fid)
        return m.Rstatfs(tag=tag, type=0x01021997, bsize=4096, namelen=255)

    # ------------------------------------------------------------ the rest

    def fsync(self, tag: int, fid: int, *rest: int) -> m.Message:
        self.fids.get(fid)
        return m.Rfsync(tag=tag)

    def lock(self, tag: int, fid: int, *lock) -> m.Message:
        self.fids.get(fid)
        return m.Rlock(tag=tag, status=0)  # nothing to lock: every lock is granted

    def getlock(self, tag: int, fid: int, type: int, start: int, length: int, proc_id: int, client_id: str) -> m.Message:
        self.fids.get(fid)
        return m.Rgetlock(tag=tag, type=2, start=start, length=length, proc_id=proc_id, client_id=client_id)

    def xattrwalk(self, tag: int, fid: int, *newfid_and_name) -> m.Message:
        self.fids.get(fid)
        raise RequestError("synthetic files have no extended attributes", errno.EOPNOTSUPP)

    def readlink(self, tag: int, fid: int) -> m.Message:
        raise RequestError(f"{self.fids.get(fid).node.name} is not a symbolic link", errno.EINVAL)


def refuse_change(name: str):
    """The handler of a request that would change the tree's shape (Tmkdir, Trename ...): refused."""
    def refuse(self, tag: int, *fields) -> m.Message:
        raise NotPermitted(f"{name}: the tree of anvilfs cannot be changed that way; use the ctl files")
    return refuse


_RGETATTR = frame_maker(m.Rgetattr)  # Linux stats every file it opens: the reply built from its values
