"""One release only: the history journal of an anvilfs before STATE/anvilfs.db, read once into the database.

Up to 0dec9af a change's message was appended to STATE/history.journal (a
JSON array [record id, message] a line) and committed from
STATE/history.committing (the journal renamed, a batch at a time, its last
record id the batch's trailer in git). At the first start after the upgrade:

    1. the messages of history.committing (unless its batch is the last commit
       already: the old server died after committing it) and of history.journal
       are inserted into history_pending, in one transaction with a mark of each
       file imported (its digest)
    2. both files are moved to STATE/imported/TIME/ (in the writer thread: a
       move is fsynced)

A crash between 1 and 2 (or in 2) leaves files whose digest is their mark:
they are moved, not imported twice. A move refused (a file where
STATE/imported goes) is tried again at each round of history, and holds
no commit back (GitHistory._move_imported). A crash before 1 leaves them as they
were. One-way: an older anvilfs finds no journal afterwards, only the database.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Awaitable, Callable

from .database import Database
from .private import PrivateDir, move_aside

JOURNAL = "history.journal"
COMMITTING = "history.committing"
_TRAILER = "Anvilfs-Batch: "


async def import_journal(root: PrivateDir, db: Database, head_message: Callable[[], Awaitable[str]],
                         on_error: Callable[[str], None]) -> list[str]:
    """Step 1: the messages in history_pending (once: the marks); returns the files to move aside (step 2,
    move_imported), none if there were none."""
    found = {name: data for name in (COMMITTING, JOURNAL) if (data := root.read(name)) is not None}
    if not found:
        return []
    fresh = {name: data for name, data in found.items() if not _imported(db, name, data)}
    messages = []
    if COMMITTING in fresh:
        batch = _records(fresh[COMMITTING], COMMITTING, on_error)
        if not batch or _TRAILER + batch[-1][0] not in (await head_message()).splitlines():
            messages += [message for _, message in batch]
    if JOURNAL in fresh:
        messages += [message for _, message in _records(fresh[JOURNAL], JOURNAL, on_error)]
    if fresh:
        await db.call(lambda conn: _insert(conn, messages, fresh)).wait()
    return list(found)


async def move_imported(root: PrivateDir, db: Database, names: list[str]) -> None:
    """Step 2: the imported files moved to STATE/imported/TIME/ (in the writer thread: a move is fsynced)."""
    await db.call(lambda conn: move_aside(root, names), barrier=True).wait()


def _imported(db: Database, name: str, data: bytes) -> bool:
    """Whether this very file was imported already (a start killed before it was moved away)."""
    return db.read("SELECT value FROM history_meta WHERE key = ?", (f"imported {name}",)) == [(_digest(data),)]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data).hexdigest()


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


def _insert(conn: sqlite3.Connection, messages: list[str], files: dict[str, bytes]) -> None:
    conn.executemany("INSERT INTO history_pending (message) VALUES (?)", [(m,) for m in messages])
    conn.executemany("INSERT OR REPLACE INTO history_meta VALUES (?, ?)",
                     [(f"imported {name}", _digest(data)) for name, data in files.items()])


