"""A database damaged by hand, as a bad sector or a torn copy would leave it, for the tests of its check."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def damage_a_page(db: Path) -> None:
    """A table anvilfs never reads, filled over several pages, its root page then damaged: the start goes as
    it would, and only a check of the whole file meets the damage."""
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE not_anvilfs (n INTEGER, text TEXT)")
        conn.executemany("INSERT INTO not_anvilfs VALUES (?, ?)", [(n, "x" * 500) for n in range(200)])
    conn.close()
    damage_root(db, "not_anvilfs")


def damage_root(db: Path, table: str) -> None:
    """The header of `table`'s root page overwritten (the server stopped: no other connection)."""
    with sqlite3.connect(db) as conn:
        root, = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        page_size, = conn.execute("PRAGMA page_size").fetchone()
    conn.close()  # the last connection: the write-ahead log is checkpointed into the file, and gone
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    with open(db, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xff" * 16)


def damage_schema_page(db: Path) -> None:
    """The b-tree header of the file's first page (the schema, after SQLite's 100-byte file header)."""
    with open(db, "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 8)
