"""The merge worktree's lock and journal: one step at a time, and a killed step found and finished or undone.

The lock is a flock on MERGE.lock beside the merge worktree, held while a
step runs and inherited by every git and gate the step starts: a server
killed mid-step leaves its children to finish (their output goes to files,
process.py), and the next step or the start-up repair waits for the lock
until they have. So a lock file of git's in the merge worktree's own admin
directory, found while we hold the lock, belongs to a git that is dead.

The journal, MERGE.journal beside it, says which refs a step is about to
move (written and fsynced before, removed after): the repair reads it to
finish a fast-forward of REPO's checkout that a power cut interrupted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
from collections.abc import AsyncIterator

import trio

from .errors import StepRunning
from .git import Git

POLL = 0.05  # seconds between tries of the lock while a killed step's children finish


@contextlib.asynccontextmanager
async def held(git: Git, merge_path: str, wait: float) -> AsyncIterator[Git]:
    """Hold the step lock (waiting up to `wait` seconds); a Git whose children inherit it."""
    os.makedirs(os.path.dirname(merge_path), exist_ok=True)
    fd = os.open(merge_path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        with trio.move_on_after(wait) as waited:
            while not _try_lock(fd):
                await trio.sleep(POLL)
        if waited.cancelled_caught:
            raise StepRunning(f"wait, or end it: a merge step of {merge_path} still runs (its git or gate "
                              "outlived the process that started it)")
        yield dataclasses.replace(git, pass_fds=(*git.pass_fds, fd))
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise


async def write_journal(merge_path: str, record: dict[str, str]) -> None:
    await trio.to_thread.run_sync(_write_durably, merge_path + ".journal", json.dumps(record).encode())


def read_journal(merge_path: str) -> dict[str, str] | None:
    try:
        with open(merge_path + ".journal", "rb") as file:
            return json.loads(file.read())
    except FileNotFoundError:
        return None
    except ValueError:
        return None  # torn by a power cut before its rename: the step had moved nothing yet


async def clear_journal(merge_path: str) -> None:
    await trio.to_thread.run_sync(_remove_durably, merge_path + ".journal")


def _write_durably(path: str, data: bytes) -> None:
    temporary = path + ".new"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temporary, path)
    _sync_dir(os.path.dirname(path))


def _remove_durably(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
        _sync_dir(os.path.dirname(path))


def _sync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
