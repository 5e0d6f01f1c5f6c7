"""One release only: the history journal of an anvilfs before STATE/anvilfs.db, read once into the database.

Up to 0dec9af a change's message was appended to STATE/history.journal (a
JSON array [record id, message] a line) and committed from
STATE/history.committing (the journal renamed, a batch at a time, its last
record id the batch's trailer in git). At the first start after the upgrade:

    1. the messages of history.committing (unless its batch is the last commit
       already: the old server died after committing it) and of history.journal
       are inserted into history_pending, in one transaction with a mark of what
       was imported (a digest of the two files)
    2. both files are removed (in the writer thread: the removal is fsynced)

A crash between 1 and 2 leaves files whose digest is the mark: they are
removed, not imported twice. A crash before 1 leaves them as they were.
One-way: an older anvilfs finds no journal afterwards, only the database.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Awaitable, Callable

from .database import Database
from .private import PrivateDir

JOURNAL = "history.journal"
COMMITTING = "history.committing"
_TRAILER = "Anvilfs-Batch: "


async def import_journal(root: PrivateDir, db: Database, head_message: Callable[[], Awaitable[str]],
                         on_error: Callable[[str], None]) -> None:
    committing, journal = root.read(COMMITTING), root.read(JOURNAL)
    if committing is None and journal is None:
        return
    mark = hashlib.blake2b(b"%d\n" % len(committing or b"") + (committing or b"") + (journal or b"")).hexdigest()
    if db.read("SELECT value FROM history_meta WHERE key = 'imported'") != [(mark,)]:
        messages = []
        if committing is not None:
            batch = _records(committing, COMMITTING, on_error)
            if not batch or _TRAILER + batch[-1][0] not in (await head_message()).splitlines():
                messages += [message for _, message in batch]
        messages += [message for _, message in _records(journal or b"", JOURNAL, on_error)]
        await db.call(lambda conn: _insert(conn, messages, mark)).wait()
    await db.call(lambda conn: _remove(root), barrier=True).wait()


def _records(data: bytes, name: str, on_error: Callable[[str], None]) -> list[tuple[str, str]]:
    records = []
    *lines, torn = data.split(b"\n")
    for line in lines:
        try:
            record_id, message = json.loads(line)
            records.append((str(record_id), str(message)))
        except (ValueError, TypeError):
            on_error(f"history: skipped a line of {name} that is not a record: {line[:80]!r}")
    if torn:  # a power cut in mid-append: that change was never answered (its file is committed as recovered)
        on_error(f"history: skipped the last line of {name}, cut off by a crash (not a record): {torn[:80]!r}")
    return records


def _insert(conn: sqlite3.Connection, messages: list[str], mark: str) -> None:
    conn.executemany("INSERT INTO history_pending (message) VALUES (?)", [(m,) for m in messages])
    conn.execute("INSERT OR REPLACE INTO history_meta VALUES ('imported', ?)", (mark,))


def _remove(root: PrivateDir) -> None:
    root.remove(COMMITTING)
    root.remove(JOURNAL)
