"""Where anvilfs is found by default, for the server and the client alike.

Both sides must agree on these without the client importing the server
(which pulls in trio and the backends), so they live here, on their own.
"""

from __future__ import annotations

import getpass
import os


def default_namespace() -> str:
    """plan9port's namespace directory: $NAMESPACE, else /tmp/ns.$USER.$DISPLAY (DISPLAY :0 if unset)."""
    ns = os.environ.get("NAMESPACE")
    if ns:
        return ns
    display = os.environ.get("DISPLAY") or ":0"
    return f"/tmp/ns.{getpass.getuser()}.{display}"


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
    if len(parts) != 3 or parts[0] != "tcp" or not parts[1] or not parts[2].isdigit() or int(parts[2]) > 65535:
        raise ValueError(f"bad address {address!r}: write tcp!HOST!PORT, e.g. tcp!127.0.0.1!5640")
    return parts[1], int(parts[2])
