"""For the tests of the state directory's git history (tests/domain/history/): git as the test sees it."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import trio

from anvilfs.storage import HISTORY_SCHEMA, Database, GitHistory, PrivateDir

DEADLINE = 20  # seconds: far beyond what git needs here; reached only when something is broken


def git(state, *args: str, check: bool = True) -> str:
    """git on the state's repository, from the test, with no config or environment of the machine's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=os.path.join(state, ".git"), GIT_WORK_TREE=str(state), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C")
    result = subprocess.run(["git", *args], env=env, capture_output=True, text=True, timeout=DEADLINE)
    if check:
        assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout + result.stderr


def messages_in_history(state) -> list[str]:
    """Every change message in `git log`: single-change subjects and grouped bodies, not the group subjects."""
    if not git(state, "for-each-ref", "refs/heads/main").strip():
        return []
    lines = git(state, "log", "--format=%B").splitlines()
    return [line for line in lines if ": " in line and not line.startswith("Anvilfs-Batch: ")
            and " changes: " not in line]


def subjects(state) -> list[str]:
    return git(state, "log", "--format=%s").splitlines()


async def within_real_seconds(seconds: float, what: str, afn) -> None:
    """await afn() with a wall-clock deadline: under autojump_clock trio's own deadlines would expire
    the moment every task waits for git, which runs in real time."""
    finished = threading.Event()
    expired = False

    async def watchdog(scope: trio.CancelScope) -> None:
        nonlocal expired
        if not await trio.to_thread.run_sync(finished.wait, seconds):
            expired = True
            scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watchdog, nursery.cancel_scope)
        await afn()
        finished.set()
    assert not expired, f"{what}: not done within {seconds} s"


def reporter():
    """An on_error for the history: what it said, and an event set at its first report."""
    errors, reported = [], trio.Event()

    def on_error(text):
        errors.append(text)
        reported.set()

    return errors, reported, on_error


def write_bead(root: PrivateDir, name: str, text: str = "title = 'x'\n") -> None:
    root.subdir("beads").write_atomic(f"{name}.toml", text.encode())


@contextmanager
def state_db(state) -> Iterator[Database]:
    """The state's database (STATE/anvilfs.db, with the history's tables), as a server opens it."""
    root = PrivateDir(state)
    db = Database(root, "anvilfs.db", HISTORY_SCHEMA)
    try:
        yield db
    finally:
        db.close()
        root.close()


def pending(db: Database) -> list[str]:
    """The messages waiting in the database for git."""
    return [message for (message,) in db.read("SELECT message FROM history_pending ORDER BY seq")]


def make_history(state) -> None:
    with state_db(state) as db:
        GitHistory(PrivateDir(state), db).close()
