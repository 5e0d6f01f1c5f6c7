"""The configured commands: a repository's setup (installing dependencies) and its gates.

Each is an argv list from the configuration, never text from a client (the
server runs no command line that arrived over 9P); each runs with a
timeout that ends its whole process group, its output's tail kept for the
report. The environment is the server's, without GIT_* (a GIT_DIR there
would point the gate's own git at another repository).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import process
from .model import MergeConfig


@dataclass(frozen=True, slots=True)
class CommandFailed:
    argv: tuple[str, ...]
    detail: str  # one line: which command, and how it ended
    output: str = ""  # the tail of its output


async def run_all(commands: Iterable[tuple[str, Sequence[str]]], cwd: str, timeout: float,
                  pass_fds: Sequence[int] = ()) -> CommandFailed | None:
    """Run (kind, argv) commands in turn in `cwd` until one fails; None when all exit 0."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    for kind, argv in commands:
        try:
            done = await process.run(argv, cwd=cwd, env=env, timeout=timeout, pass_fds=pass_fds)
        except OSError as exc:  # not found, not executable: the configuration's mistake, said plainly
            return CommandFailed(tuple(argv), f"{kind} {argv[0]} could not start: {exc.strerror}")
        if done.timed_out or done.status:
            why = f"did not finish within {timeout:g}s" if done.timed_out else f"exited {done.status}"
            return CommandFailed(tuple(argv), f"{kind} {' '.join(argv)} {why}", done.tail())
    return None


async def setup(path: str, config: MergeConfig) -> CommandFailed | None:
    """The repository's setup commands, run in a session's new worktree (the merge step runs them itself)."""
    return await run_all([("setup", argv) for argv in config.setup], path, config.gate_timeout)
