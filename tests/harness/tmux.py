"""Private tmux servers for tests: a unique ``tmux -L`` name, and a cleanup that leaves nothing.

    with private_tmux() as socket:        # skips (fails under CI) without tmux
        TmuxBackend(..., tmux_socket=socket)

``kill-server`` ends the server and its agents, but tmux leaves its socket
file in its directory (``$TMUX_TMPDIR/tmux-UID``): ``end_tmux`` removes that too.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

from .prerequisites import require

PREFIX = "anvilfs-test-"
KILL_DEADLINE = 10  # seconds for tmux kill-server


def socket_path(name: str) -> Path:
    directory = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return Path(directory, f"tmux-{os.getuid()}", name)


def end_tmux(name: str) -> None:
    """Kill the tmux server ``name`` (if it runs) and remove its socket file."""
    try:
        subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, timeout=KILL_DEADLINE)
    except subprocess.TimeoutExpired:
        return  # a server that may still run keeps its socket: without it, nothing could reach it
    socket_path(name).unlink(missing_ok=True)


@contextlib.contextmanager
def private_tmux() -> Iterator[str]:
    """A fresh ``tmux -L`` name; the server started on it, and its socket, are gone afterwards."""
    require("tmux")
    name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        end_tmux(name)
