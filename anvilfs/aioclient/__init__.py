"""A 9P2000 client for trio that keeps many requests in flight on one connection.

For programs that wait on many files at once (the conductor: the `wait` of
each session and `events`, together). It flushes a request whose caller is
cancelled. The light `anvilfs` commands never load it (they use the
blocking anvilfs.client, which has no trio); both drive the same sans-IO
core, anvilfs/client/protocol.py.
"""

from ..client.address import AddressError
from ..client.errors import ConnectionLost, ServerError
from .client import AsyncClient
from .follow import Lines

__all__ = ["AddressError", "AsyncClient", "ConnectionLost", "Lines", "ServerError"]
