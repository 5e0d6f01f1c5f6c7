"""What a 9P client raises, blocking or async alike.

    ServerError      the server answered Rerror (Rlerror): its text
    ConnectionLost   the connection broke or the server closed it (a ConnectionError)

The protocol core's own errors (anvilfs.ninep: LocalProtocolError for a
misuse of the API, RemoteProtocolError for a server that breaks 9P) stay
what they are.
"""

from __future__ import annotations


class ServerError(Exception):
    """The server answered Rerror (or Rlerror); the text is the server's."""


class ConnectionLost(ConnectionError):
    """The connection to the server broke or was closed by it.

    Its own type, so that a caller can tell it from a BrokenPipeError of its
    own standard output (`anvilfs read agent/events | head -1`).
    """


def lost(exc: OSError | None = None) -> ConnectionLost:
    why = f" ({exc.strerror or exc})" if exc is not None else ""
    return ConnectionLost(f"the server closed the connection{why}")
