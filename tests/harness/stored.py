"""What tests of the state's database (STATE/anvilfs.db) need: a crash's copy, a disk that refuses, a request.

    crash_copy(state, dest)     the state directory as a SIGKILL at this instant leaves it
    FullDatabase(db)            every change refused with ENOSPC while `full` is set
    await answered(fn)          fn() as a 9P write runs it: answered once its changes are on disk
    request(fn)                 the same, the wait left to the caller
    hold_writer(db)             nothing commits until the returned event is set
    KV_SCHEMA                   a table of keys and values, for tests of the database itself
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import threading
from pathlib import Path

from anvilfs.waitable import collecting, on_disk

KV_SCHEMA = "CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v BLOB);"


def crash_copy(state: Path, dest: Path) -> Path:
    """A copy of `state` with the database as its last commit left it (what a SIGKILL leaves: a commit is
    on disk, with synchronous=FULL, before anything that waited for it goes on; nothing queued after it is)."""
    shutil.copytree(state, dest, ignore=shutil.ignore_patterns("anvilfs.db", "anvilfs.db-*"))
    source = sqlite3.connect(f"file:{state / 'anvilfs.db'}?mode=ro", uri=True)
    fd = os.open(dest / "anvilfs.db", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
    os.close(fd)
    target = sqlite3.connect(dest / "anvilfs.db")
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return dest


class FullDatabase:
    """The database refuses every change (ENOSPC, as a full disk would) while `full` is set."""

    def __init__(self, db):
        self.full = True
        call = db.call

        def refusing_call(work, *, barrier: bool = False):
            def refused(conn):
                if self.full:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return work(conn)
            return call(refused, barrier=barrier)

        db.call = refusing_call


def request(fn, what: str = "the write"):
    """fn() as a 9P request runs it (server/dispatch.py): its result, and the Later its answer waits on
    (every change it queued on disk; its wait() raises the AnvilError (EIO) the client gets if one failed)."""
    with collecting() as saving:
        result = fn()
    return result, on_disk(saving, what)


async def answered(fn, what: str = "the write"):
    """fn(), and once what a 9P request that ran it waits for before its answer is done: its result."""
    result, later = request(fn, what)
    await later.wait()
    return result


def hold_writer(db) -> threading.Event:
    """Keep the database's writer thread busy (what is queued meanwhile waits) until the event is set."""
    release, holding = threading.Event(), threading.Event()

    def hold(conn):
        holding.set()
        assert release.wait(30), "the test never released the writer"

    db.call(hold, barrier=True)
    assert holding.wait(30), "the writer thread never took the job that holds it"
    return release
