"""What tasks wait on: a version counter (trio.Event is one-shot), and a request's answer that comes later."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

from .errors import AnvilError


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


class Settles(Protocol):
    async def wait(self) -> None: ...  # returns once done; raises OSError if it failed


class Later:
    """The answer of a request that is accepted but not yet on disk (a prompt): the server answers it once
    `wait()` returns, or with the AnvilError it raises. The domain has already acted on the outcome then."""

    __slots__ = ("_settles", "_failed")

    def __init__(self, settles: Settles, failed: Callable[[OSError], AnvilError]):
        self._settles, self._failed = settles, failed

    async def wait(self) -> None:
        try:
            await self._settles.wait()
        except OSError as exc:
            raise self._failed(exc) from None
