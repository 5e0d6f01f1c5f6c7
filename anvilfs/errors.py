"""The errors anvilfs reports to the people and programs using its files.

Every error a client can see is an AnvilError: its message says first what
to do, then what was wrong, in a few words (plan9port keeps 127 bytes); its
detail (a command's usage, say) goes only to `agent/errors`, with the
message. Its errno is what 9P2000.u and 9P2000.L clients get. The domain
code and the tree raise these; the server turns them into Rerror/Rlerror.

    AnvilError               EIO
    ├── NotFound             ENOENT   no such file, session, backend, role
    ├── PermissionDenied     EACCES   file mode forbids it
    ├── NotPermitted         EPERM    the tree cannot be changed that way
    ├── InvalidRequest       EINVAL   bad command, argument or value
    ├── NameTaken            EEXIST   a session of that name already exists
    ├── Busy                 EBUSY    the object is in a state that forbids it
    ├── LimitExceeded        EFBIG    a configured size limit would be passed
    ├── TooLong              E2BIG    a ctl line longer than a line may be
    ├── TooMany              EUSERS   as many sessions as allowed exist already
    └── NotSupported         EOPNOTSUPP  the operation makes no sense here

KINDS is the one table of what each errno means and how a plain 9P2000
text must be worded for it: such a client gets only the text, and plan9port's
9pfuse maps it by keyword (anvilfs/ninep/errstr.py), so each kind names the
phrase its text carries.
"""

from __future__ import annotations

import errno as _errno
from dataclasses import dataclass


class AnvilError(Exception):
    """An error whose text is meant for the user who caused it."""

    errno = _errno.EIO

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFound(AnvilError):
    errno = _errno.ENOENT


class PermissionDenied(AnvilError):
    errno = _errno.EACCES


class NotPermitted(AnvilError):
    errno = _errno.EPERM


class InvalidRequest(AnvilError):
    errno = _errno.EINVAL


class NameTaken(AnvilError):
    errno = _errno.EEXIST


class Busy(AnvilError):
    errno = _errno.EBUSY


class LimitExceeded(AnvilError):
    errno = _errno.EFBIG


class TooLong(AnvilError):
    errno = _errno.E2BIG


class TooMany(AnvilError):
    errno = _errno.EUSERS


class NotSupported(AnvilError):
    errno = _errno.EOPNOTSUPP


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of error: its errno, and the phrase its 9P2000 text carries."""

    errno: int
    phrase: str  # contains the 9pfuse keyword that maps to ninepfuse_errno
    ninepfuse_errno: int  # what a process on a 9pfuse mount gets
    meaning: str


_E = _errno
# 9pfuse has no keyword for EOPNOTSUPP or for most limits: ENOSYS and E2BIG
# ("too long") are the nearest it can give.
KINDS: dict[int, Kind] = {k.errno: k for k in (
    Kind(_E.EPERM, "not permitted", _E.EPERM, "the tree cannot be changed that way"),
    Kind(_E.EACCES, "permission denied", _E.EACCES, "the file's mode forbids it"),
    Kind(_E.EEXIST, "already exists", _E.EEXIST, "the name is taken"),
    Kind(_E.ENOENT, "does not exist", _E.ENOENT, "no such file, session, backend or role"),
    Kind(_E.EINVAL, "invalid", _E.EINVAL, "bad command, argument or value"),
    Kind(_E.EBUSY, "busy", _E.EBUSY, "the object's state forbids it now"),
    Kind(_E.EBADF, "bad file", _E.EBADF, "the fid is unknown, taken, or not open that way"),
    Kind(_E.EISDIR, "is a directory", _E.EISDIR, "a directory cannot be used that way"),
    Kind(_E.ENOTDIR, "not a directory", _E.ENOTDIR, "a walk past a file"),
    Kind(_E.EOPNOTSUPP, "not implemented", _E.ENOSYS, "the operation makes no sense here"),
    Kind(_E.E2BIG, "too long", _E.E2BIG, "a line or walk longer than allowed"),
    Kind(_E.EFBIG, "too long", _E.E2BIG, "a prompt or mail larger than allowed"),
    Kind(_E.ENOSPC, "too long", _E.E2BIG, "an inbox holds as many as allowed"),
    Kind(_E.EMFILE, "too long", _E.E2BIG, "as many fids as allowed are open"),
    Kind(_E.EUSERS, "too long", _E.E2BIG, "as many sessions or connections as allowed"),
    Kind(_E.EIO, "i/o error", _E.EIO, "the server failed (a disk, or a bug)"),
)}


def kind_of(code: int) -> Kind:
    """The kind of an errno; one outside the table is reported as an I/O error."""
    return KINDS.get(code) or KINDS[_errno.EIO]
