"""The database's writer and the history, done in the caller: for the rules of beads and convoys, without threads.

The rules (tests/unit/test_beads.py) do not depend on when a write reaches the disk, only on what happens
once it has or has not; here each job runs at once, in the caller, and settles before `call` returns. The
writer thread itself is tested in tests/unit/test_database.py, beads through it in tests/server/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Settled:
    """A Commit that is settled already: `then` runs at once."""

    def __init__(self, error: OSError | None = None, result: Any = None):
        self.error, self.result = error, result

    def then(self, fn: Callable[[OSError | None], None]) -> None:
        fn(self.error)


class InlineDatabase:
    def call(self, work: Callable[[None], Any], *, barrier: bool = False, answer: bool = True) -> Settled:
        try:
            return Settled(result=work(None))
        except OSError as exc:
            return Settled(error=exc)


class Messages(list):
    """The history's side of TomlObjects: the messages kept, in order."""

    def keep(self, conn: None, message: str) -> None:
        self.append(message)

    def follow(self, commit: Settled) -> None:
        pass

    def lost(self, message: str, error: OSError) -> None:
        raise AssertionError(f"the message {message!r} was lost: {error}")
