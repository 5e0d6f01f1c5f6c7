"""A version counter that tasks can wait on (trio.Event is one-shot)."""

from __future__ import annotations

import trio


class Changes:
    """Counts changes; ``wait_changed(since)`` returns once the count moves past it."""

    __slots__ = ("version", "_event")

    def __init__(self) -> None:
        self.version = 0
        self._event = trio.Event()

    def bump(self) -> None:
        self.version += 1
        event, self._event = self._event, trio.Event()
        event.set()

    async def wait_changed(self, since: int) -> int:
        while self.version == since:
            await self._event.wait()
        return self.version
