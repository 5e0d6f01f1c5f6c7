"""Where the conductor says what it is doing, for others to read: an optional part.

The engine calls `update` as each step begins and `finish` at the end. The
default reports nowhere (progress goes to stderr anyway); item 4 of issue 9
(a session of kind `external` the conductor owns) plugs in here.
"""

from __future__ import annotations

from typing import Protocol


class Reporter(Protocol):
    async def update(self, workflow: str, step: str, rounds: tuple[int, ...]) -> None: ...
    async def finish(self, outcome: str, why: str) -> None: ...


class NullReporter:
    async def update(self, workflow: str, step: str, rounds: tuple[int, ...]) -> None:
        pass

    async def finish(self, outcome: str, why: str) -> None:
        pass
