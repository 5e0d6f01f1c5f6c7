"""Running a program (git, a gate) with a deadline, its output kept in an unlinked file, never a pipe.

A pipe would kill the child with SIGPIPE the moment its parent dies: a git
killed between writing a lock file and renaming it leaves the lock behind,
and a rebase killed half-way leaves a worktree mid-rebase. With a file the
child of a killed server finishes what it started, and the start-up repair
(repair.py) waits for it through the flock it inherited (`pass_fds`).

Each child gets a session of its own, so a timeout ends it with everything
it started (a gate's test runner, git's ssh): SIGTERM first, which lets git
remove its lock files, then SIGKILL.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import trio

GRACE = 5.0  # seconds between SIGTERM and SIGKILL
TAIL = 4000  # characters of output kept for a report


@dataclass(frozen=True, slots=True)
class Finished:
    """How a program ended: its exit status (None if it was ended for its time) and its output."""

    argv: tuple[str, ...]
    status: int | None
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.status is None

    def tail(self, limit: int = TAIL) -> str:
        """The end of its output, stdout then stderr, as a report shows it."""
        text = (self.stdout + self.stderr).rstrip()
        return text if len(text) <= limit else "..." + text[-limit:]


async def run(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout: float,
              stdin: bytes = b"", pass_fds: Sequence[int] = ()) -> Finished:
    """Run `argv` to its end or its deadline; never raises for a non-zero exit."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        status: int | None = None
        with trio.move_on_after(timeout):
            result = await trio.run_process(
                list(argv), stdin=stdin, stdout=out, stderr=err, check=False, cwd=cwd, env=dict(env),
                start_new_session=True, pass_fds=tuple(pass_fds), deliver_cancel=_end_group)
            status = result.returncode
        return Finished(tuple(argv), status, _read(out), _read(err))


def _read(file) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


async def _end_group(process: trio.Process) -> None:
    """SIGTERM to the child's whole group, SIGKILL after GRACE seconds if it is still there."""
    _signal_group(process.pid, signal.SIGTERM)
    with trio.move_on_after(GRACE):
        await process.wait()
    _signal_group(process.pid, signal.SIGKILL)  # what is left of the group (a test runner's children)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass  # already gone
