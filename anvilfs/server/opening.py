"""How a fid becomes an open file: Topen and Tlopen, and a create of an existing file.

anvilfs makes its files itself (a session's by `new` on ctl), so a create
never adds a name. But clients such as p9fs create before every write, and
Linux's open(O_CREAT) may too, so a create of a file that exists opens it
(SPEC §4, a deliberate departure from open(5)): truncation is ignored as
for any open, and an empty open and close is not a prompt.
"""

from __future__ import annotations

import errno

from ..errors import NameTaken, NotPermitted, PermissionDenied
from ..ninep import RequestError
from ..ninep import consts as c
from ..tree import Directory, Node
from .state import Fid


def plan9_access(mode: int) -> tuple[bool, bool]:
    """(read, write) asked for by a 9P2000 open mode."""
    access = mode & 3
    return access in (c.OREAD, c.ORDWR, c.OEXEC), access in (c.OWRITE, c.ORDWR)


def linux_access(flags: int) -> tuple[bool, bool]:
    """(read, write) asked for by Linux open flags (Tlopen, Tlcreate)."""
    access = flags & c.L_O_ACCMODE
    return access in (0, 2), access in (1, 2)


def open_fid(fid: Fid, read: bool, write: bool, trunc: bool) -> None:
    """Open the file `fid` names, after the generic checks; nothing changes if one fails."""
    node = fid.node
    if fid.handle is not None or fid.listing is not None:
        raise RequestError("fid is already open", errno.EBADF)
    if node.is_dir:
        if write or trunc:
            raise RequestError(f"{node.name} is a directory: open it for reading only", errno.EISDIR)
        fid.listing, fid.can_read = [], True
        return
    if read and not node.readable:
        raise PermissionDenied(f"{node.name} is write-only (mode {node.mode:04o})")
    if write and not node.writable:
        raise PermissionDenied(f"{node.name} is read-only (mode {node.mode:04o})")
    handle = node.open(fid.caller)
    if trunc:
        handle.truncate()
    fid.handle, fid.can_read, fid.can_write = handle, read, write


def open_existing(dir_fid: Fid, name: str, read: bool, write: bool, *, exclusive: bool = False) -> Fid:
    """A create of `name` in the directory `dir_fid` names: the opened fid that replaces it."""
    if dir_fid.handle is not None or dir_fid.listing is not None:
        raise RequestError("fid is already open: create with an unopened fid of the directory", errno.EBADF)
    parent = dir_fid.node
    if not isinstance(parent, Directory):
        raise RequestError(f"cannot create in {parent.name}: not a directory", errno.ENOTDIR)
    node = parent.lookup(name)
    if node is None:
        raise NotPermitted(f"cannot create {name!r}: anvilfs makes its files itself (sessions: 'new' on ctl)")
    if exclusive:
        raise NameTaken(f"{name} exists already (an open, or a create without O_EXCL, opens it)")
    if node.is_dir:
        raise NameTaken(f"{name} exists and is a directory: open it instead")
    opened = Fid(trail=dir_fid.trail + (node,), caller=dir_fid.caller)
    open_fid(opened, *_allowed(node, read, write), trunc=False)
    return opened


def _allowed(node: Node, read: bool, write: bool) -> tuple[bool, bool]:
    """What a create opens: what was asked as far as the file allows, else what it allows.

    p9fs in 9P2000(.u) creates with OREAD before it opens for writing, so a
    create asking for what a file does not allow (OREAD of `in`) must not fail.
    """
    read, write = read and node.readable, write and node.writable
    if read or write:
        return read, write
    return node.readable, node.writable
