"""Where anvilfs is found by default, for the server and the client alike.

Both sides must agree on these without the client importing the server
(which pulls in trio and the backends), so they live here, on their own.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import shlex


def default_namespace() -> str:
    """plan9port's namespace directory: $NAMESPACE, else /tmp/ns.USER.DISPLAY, as plan9port's getns() makes it.

    USER is the login name from the password database (not $USER, which many
    shells and containers leave unset), and DISPLAY is canonicalised the way
    plan9port does (`:0.0` -> `:0`; `:0` when unset), so `9p` and anvilfs agree.
    """
    ns = os.environ.get("NAMESPACE")
    if ns:
        return ns
    return f"/tmp/ns.{login_name()}.{canonical_display(os.environ.get('DISPLAY') or ':0.0')}"


def login_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # a uid with no entry (some containers): plan9port says "none"
        return "none"


def canonical_display(display: str) -> str:
    """xxx:0.0 -> xxx:0 (only a screen number of 0 is dropped, as in plan9port)."""
    colon = display.rfind(":")
    if colon >= 0 and display.endswith(".0") and "." in display[colon:]:
        return display[:-2]
    return display


def default_state_dir() -> str:
    """$XDG_STATE_HOME/anvilfs, else ~/.local/state/anvilfs."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "anvilfs")


def default_token_path() -> str:
    """The token file a server with the default state directory writes (TCP attaches present it)."""
    return os.path.join(default_state_dir(), "token")


def parse_tcp_address(address: str) -> tuple[str, int]:
    """A plan9 dial string `tcp!host!port` as host and port; ValueError says how to write one."""
    parts = address.split("!")
    port = parts[-1]  # the ASCII digits only: str.isdigit() is true for "²" (which int() refuses) and "٣" (3)
    if len(parts) != 3 or parts[0] != "tcp" or not parts[1] or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ValueError(f"bad address {address!r}: write tcp!HOST!PORT, e.g. tcp!127.0.0.1!5640")
    return parts[1], int(port)


def is_loopback(host: str) -> bool:
    """A host name or address that stays on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def mount_commands(socket_path: str, where: str = "/mnt/agent") -> tuple[str, str]:
    """The commands that mount the tree of the server at `socket_path` on `where`: with the kernel's 9p
    (v9fs), and with plan9port's 9pfuse where the kernel has none. The real path, never a guess at
    $USER and $DISPLAY (with USER unset, `/tmp/ns.$USER.:0` is `/tmp/ns..:0`)."""
    kernel = (f"sudo mount -t 9p -o trans=unix,version=9p2000.L,access={os.getuid()} "
              f"{shlex.quote(socket_path)} {shlex.quote(where)}")
    return kernel, f"9pfuse {shlex.quote('unix!' + socket_path)} {shlex.quote(where)}"
