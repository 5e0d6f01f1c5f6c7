"""The database's writer and the history, done in the caller: for the rules of beads and convoys, without threads.

The rules (tests/unit/test_beads.py) do not depend on when a write reaches the disk, only on what happens
once it has or has not; here each job runs at once, in the caller, and settles before `call` returns. The
writer thread itself is tested in tests/unit/test_database.py, beads through it in tests/server/.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any


class Settled:
    """A Commit that is settled already: `then` runs at once."""

    def __init__(self, error: OSError | None = None, result: Any = None):
        self.error, self.result = error, result

    def then(self, fn: Callable[[OSError | None], None]) -> None:
        fn(self.error)


class InlineDatabase:
    """Jobs on an in-memory SQLite connection (the parse cache's rows live there for the test's length)."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)

    def call(self, work: Callable[[sqlite3.Connection], Any], *, barrier: bool = False, answer: bool = True) -> Settled:
        try:
            return Settled(result=work(self.conn))
        except OSError as exc:
            return Settled(error=exc)

    def read(self, sql: str, params=()) -> list[tuple]:
        return self.conn.execute(sql, tuple(params)).fetchall()


class Messages(list):
    """The history's side of TomlObjects: the messages kept, in order."""

    def keep(self, conn: sqlite3.Connection, message: str, path: str = "") -> None:
        self.append(message)

    def follow(self, commit: Settled) -> None:
        pass

    def lost(self, message: str, error: OSError) -> None:
        raise AssertionError(f"the message {message!r} was lost: {error}")
