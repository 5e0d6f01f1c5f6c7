"""Where the async client connects: the light client's names and addresses, dialled with trio."""

from __future__ import annotations

import socket

import trio

from ..client.address import CONNECT_TIMEOUT, AddressError, Target, cannot_connect, resolve


def target_of(address: str) -> Target:
    """`agent` (a service in the namespace, as `anvilfs read agent/...`), `unix!/path`, `tcp!host!port`, or a socket path."""
    if not address:
        raise AddressError("no address: give a service name (agent), unix!/path/to/socket or tcp!HOST!PORT")
    if "!" in address or "/" in address:
        return resolve("", address)
    return resolve(f"{address}/", None)


async def open_stream(target: Target) -> trio.abc.HalfCloseableStream:
    """A connected stream; AddressError names the address and what to start."""
    try:
        if target.is_tcp:
            with trio.fail_after(CONNECT_TIMEOUT):
                return await trio.open_tcp_stream(*target.address)
        return await trio.open_unix_socket(target.address)
    except trio.TooSlowError:
        raise cannot_connect(target, socket.timeout()) from None
    except OSError as exc:
        raise cannot_connect(target, exc) from None
