"""Resolve plan9port-style names (`agent/list`, `-a unix!/path`, `-a tcp!host!port`) and dial them."""

from __future__ import annotations

import os
import socket
import stat
from dataclasses import dataclass

from ..places import default_namespace, parse_tcp_address

CONNECT_TIMEOUT = 10.0  # seconds for a TCP connect; a blocked read afterwards may wait for ever


class AddressError(Exception):
    """A name or address the client cannot use or reach; the text says what to do."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where to dial, and the path of the file on that server."""

    family: int
    address: str | tuple[str, int]
    path: str
    service: str = ""  # the name's first element, when it named the service (no -a)

    @property
    def dial_string(self) -> str:
        if self.family == socket.AF_UNIX:
            return f"unix!{self.address}"
        host, port = self.address
        return f"tcp!{host}!{port}"

    @property
    def is_tcp(self) -> bool:
        return self.family != socket.AF_UNIX


def resolve(name: str, address: str | None = None) -> Target:
    """As 9p(1): without -a, `srv/path` means /path on the server unix!$NAMESPACE/srv."""
    if address is None:
        service, _, path = name.partition("/")
        if not service:
            raise AddressError(f"{name!r}: without -a, name a service first, e.g. agent/list")
        return Target(socket.AF_UNIX, os.path.join(default_namespace(), service), path, service)
    path = name.strip("/")
    if address.startswith("unix!"):
        return Target(socket.AF_UNIX, address[5:], path)
    if address.startswith("tcp!"):
        try:
            host, port = parse_tcp_address(address)
        except ValueError as exc:
            raise AddressError(str(exc)) from None
        return Target(socket.AF_INET, (host, port), path)  # create_connection picks the real family
    if "!" not in address:
        return Target(socket.AF_UNIX, address, path)
    raise AddressError(f"bad address {address!r}: write unix!/path/to/socket or tcp!host!port")


def dial(target: Target, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
    """A connected blocking socket; AddressError names the address and what to start."""
    try:
        if target.is_tcp:
            sock = socket.create_connection(target.address, timeout=timeout)
            sock.settimeout(None)
            return sock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(target.address)
        except BaseException:
            sock.close()
            raise
        return sock
    except OSError as exc:
        raise cannot_connect(target, exc) from None


def _serving(namespace: str) -> bool:
    """Whether anvilfs's own socket is in the namespace directory."""
    try:
        return stat.S_ISSOCK(os.stat(os.path.join(namespace, "agent")).st_mode)
    except OSError:
        return False


def cannot_connect(target: Target, exc: OSError) -> AddressError:
    """The error for a failed dial: the address, why, and what to start (or the name meant)."""
    namespace = os.path.dirname(str(target.address))
    if target.service not in ("", "agent") and isinstance(exc, FileNotFoundError) and _serving(namespace):
        # `anvilfs read bot1/out`: a session's name taken for the service's
        guess = "/".join(filter(None, ("agent", target.service, target.path)))
        return AddressError(f"no service {target.service} in {namespace}; did you mean {guess}?")
    return AddressError(f"cannot connect to {target.dial_string}: {describe_os_error(exc)}; {_hint(target)}")


def describe_os_error(exc: OSError) -> str:
    """strerror as the middle of a sentence: "connection refused"."""
    if isinstance(exc, socket.timeout):
        return "no answer (timed out)"
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]


def _hint(target: Target) -> str:
    if target.is_tcp:
        return f"is `anvilfs serve --listen {target.dial_string}` running?"
    return "is `anvilfs serve` running?"
