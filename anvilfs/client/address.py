"""Resolve plan9port-style names: `agent/list`, `-a unix!/path`, `-a tcp!host!port`."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from ..server.listen import default_namespace, parse_tcp_address


class AddressError(Exception):
    """A name or address the client cannot use; the text says how to write it."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where to dial, and the path of the file on that server."""

    family: int
    address: str | tuple[str, int]
    path: str


def resolve(name: str, address: str | None = None) -> Target:
    """As 9p(1): without -a, `srv/path` means /path on the server unix!$NAMESPACE/srv."""
    if address is None:
        service, _, path = name.partition("/")
        if not service:
            raise AddressError(f"{name!r}: without -a, name a service first, e.g. agent/list")
        return Target(socket.AF_UNIX, os.path.join(default_namespace(), service), path)
    path = name.strip("/")
    if address.startswith("unix!"):
        return Target(socket.AF_UNIX, address[5:], path)
    if address.startswith("tcp!"):
        try:
            return Target(socket.AF_INET, parse_tcp_address(address), path)
        except Exception as exc:
            raise AddressError(str(exc)) from None
    if "!" not in address:
        return Target(socket.AF_UNIX, address, path)
    raise AddressError(f"bad address {address!r}: write unix!/path/to/socket or tcp!host!port")


def dial(target: Target, timeout: float | None = None) -> socket.socket:
    if target.family == socket.AF_UNIX:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        where = target.address
    else:
        host, port = target.address
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.settimeout(None)
        return sock
    try:
        sock.connect(where)
    except OSError as exc:
        sock.close()
        raise AddressError(f"cannot connect to {where}: {exc.strerror}; is `anvilfs serve` running?") from None
    return sock
