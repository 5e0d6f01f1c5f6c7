"""The errors anvilfs reports to the people and programs using its files.

Every error a client can see is an AnvilError: its text says what was wrong
and how to do it right, and its errno is what a 9P2000.L client (which gets
only a number) sees. The domain code and the tree raise these; the server
turns them into Rerror/Rlerror and records the full text in `agent/errors`.

    AnvilError               EIO
    ├── NotFound             ENOENT   no such file, session, backend
    ├── PermissionDenied     EACCES   file mode forbids it
    ├── NotPermitted         EPERM    the tree cannot be changed that way
    ├── InvalidRequest       EINVAL   bad command, argument or value
    ├── NameTaken            EEXIST   a session of that name already exists
    ├── Busy                 EBUSY    the object is in a state that forbids it
    ├── LimitExceeded        EFBIG    a configured limit would be passed
    └── NotSupported         EOPNOTSUPP  the operation makes no sense here
"""

from __future__ import annotations

import errno as _errno


class AnvilError(Exception):
    """An error whose text is meant for the user who caused it."""

    errno = _errno.EIO

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


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


class NotSupported(AnvilError):
    errno = _errno.EOPNOTSUPP
