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

import trio

from .deadlines import within
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


class PaneLooks:
    """Counts the looks a tmux agent's turn takes at its pane, so a test can wait for them.

    A turn follows its pane by running ``capture-pane`` every POLL seconds; a
    test that must show a turn does *not* end by itself waits for looks that
    would have ended it, rather than for a length of time.
    """

    def __init__(self, tmux) -> None:  # anvilfs.backends.tmux.Tmux, wrapped in place
        self.count = 0
        self._changed = trio.Event()
        run = tmux.run

        async def counted(*args: str, **kwargs):
            result = await run(*args, **kwargs)
            if args and args[0] == "capture-pane":
                self.count += 1
                self._changed.set()
                self._changed = trio.Event()
            return result

        tmux.run = counted

    async def wait_more(self, looks: int, *, timeout: float = 10) -> None:
        target = self.count + looks
        with within(timeout, f"{looks} more looks at the pane (seen {self.count})"):
            while self.count < target:
                await self._changed.wait()
