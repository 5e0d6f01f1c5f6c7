"""Where the server listens: the namespace's unix socket, optionally TCP.

The namespace directory is plan9port's: $NAMESPACE, else /tmp/ns.$USER.$DISPLAY
(DISPLAY defaulting to :0). It is made 0700 and the socket 0600, so only
its user can reach the server. A socket left behind by a crashed server is
replaced; one that still answers belongs to a live server and is an error.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket as stdsocket
import stat

import trio

from .. import places
from ..places import is_loopback


class ListenError(Exception):
    """The server cannot listen where it was asked to."""


def prepare_namespace(path: str) -> None:
    """Make the namespace directory, private to this user."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise ListenError(f"cannot make namespace directory {path}: {exc.strerror}") from None
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):  # in /tmp anyone could have put it there
        raise ListenError(f"namespace {path} is a symbolic link; remove it or use --namespace")
    if info.st_uid != os.getuid():
        raise ListenError(f"namespace directory {path} belongs to uid {info.st_uid}, not you; use --namespace")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)


def _clear_stale_socket(path: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise ListenError(f"{path} exists and is not a socket; move it away")
    probe = stdsocket.socket(stdsocket.AF_UNIX, stdsocket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            os.unlink(path)  # left by a server that died
            return
        raise ListenError(f"cannot check {path}: {exc.strerror}") from None
    finally:
        probe.close()
    raise ListenError(f"another server is already listening on {path}")


async def unix_listener(path: str) -> trio.SocketListener:
    """Listen on `path`, which appears only once it accepts connections.

    A socket file exists from bind(), before listen(): a client that connects in
    between is refused, and a second server starting then would take the socket
    for a dead one's and unlink it. So the socket is bound under a temporary name,
    made to listen, and then linked to `path`; link() never replaces a file, so of
    two servers starting at once exactly one gets the name.
    """
    _clear_stale_socket(path)
    temporary = os.path.join(os.path.dirname(path) or ".", f".{os.getpid()}.bind")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # left by a process of this pid that died
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        await sock.bind(temporary)
        os.chmod(temporary, 0o600)
        sock.listen(stdsocket.SOMAXCONN)  # many agents' hooks and clients may connect at once
        os.link(temporary, path)
    except FileExistsError:
        sock.close()
        raise ListenError(f"another server is already listening on {path}") from None
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return trio.SocketListener(sock)


def parse_tcp_address(address: str) -> tuple[str, int]:
    """`tcp!host!port` (plan9 dial string) into host and port."""
    try:
        return places.parse_tcp_address(address)
    except ValueError as exc:
        raise ListenError(str(exc)) from None


async def tcp_listeners(address: str, *, allow_remote: bool) -> list[trio.SocketListener]:
    host, port = parse_tcp_address(address)
    if not is_loopback(host) and not allow_remote:
        raise ListenError(
            f"{host} is not a loopback address, and the token would cross the network in clear text; "
            "forward the unix socket with ssh -L instead, or pass --allow-remote if you mean it")
    try:
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        raise ListenError(f"cannot listen on {address}: {exc.strerror}") from None
