"""Version negotiation (version(5)) and the errno values 9P2000.L carries."""

from __future__ import annotations

from .consts import Dialect

UNKNOWN = "unknown"
MIN_MSIZE = 256  # below this not even a Twalk of a few names fits


def negotiate(client_version: str) -> Dialect | None:
    """The dialect to answer a Tversion with, or None for "unknown".

    version(5): a version string may carry a suffix after a period that the
    server does not know; then only the part before the period is compared.
    """
    for dialect in Dialect:
        if client_version == dialect.value:
            return dialect
    base = client_version.split(".", 1)[0]
    if base == Dialect.P2000.value:
        return Dialect.P2000
    return None


def negotiate_msize(client_msize: int, server_max: int) -> int:
    """The msize both sides may use: the smaller of the two offers."""
    return min(client_msize, server_max)
