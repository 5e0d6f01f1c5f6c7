"""Errors of the 9P protocol core.

The tree, by who is at fault::

    NinePError                  base of everything raised by anvilfs.ninep
    ├── LocalProtocolError      we misused the API (a value that cannot be encoded)
    └── RemoteProtocolError     the peer sent something that breaks the protocol
        ├── FramingError        the byte stream itself is broken: close the connection
        └── BadMessage          one frame is bad but framing is intact: answer its tag

A BadMessage carries the tag of the frame when the header could be read, so the
server can answer Rerror to exactly that request and keep the connection.
"""

from __future__ import annotations


class NinePError(Exception):
    """Base class of the protocol core's errors."""


class LocalProtocolError(NinePError):
    """The caller asked the codec to do something the protocol cannot express."""


class RemoteProtocolError(NinePError):
    """The peer sent bytes that do not follow the protocol."""


class FramingError(RemoteProtocolError):
    """The stream cannot be split into frames any more; the connection must close."""


class BadMessage(RemoteProtocolError):
    """One well-framed message could not be decoded."""

    def __init__(self, reason: str, *, tag: int | None = None, type_id: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.tag = tag
        self.type_id = type_id


class RequestError(NinePError):
    """A request broke a generic rule (unknown fid, fid in use, ...): answer Rerror."""

    def __init__(self, message: str, errno: int):
        super().__init__(message)
        self.message = message
        self.errno = errno
