"""A blocking 9P2000 client and plan9port-style name resolution."""

from .address import AddressError, Target, dial, resolve
from .client import Client, ServerError

__all__ = ["AddressError", "Client", "ServerError", "Target", "dial", "resolve"]
