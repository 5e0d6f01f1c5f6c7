"""What tasks wait on: a version counter (trio.Event is one-shot), and a request's answer that comes later."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


class Outcome:
    """The end of work a request started in a task (git's, for a worktree), which its answer waits on: done,
    or failed with the AnvilError the answer then carries."""

    __slots__ = ("_event", "error")

    def __init__(self) -> None:
        self._event = trio.Event()
        self.error: AnvilError | None = None

    def finish(self, error: AnvilError | None = None) -> None:
        self.error = error
        self._event.set()

    @property
    def done(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()
        if self.error is not None:
            raise self.error


class _Collecting:
    """The changes a request's answer waits on, gathered while the request is handled (and only then)."""

    __slots__ = ("found", "open")

    def __init__(self) -> None:
        self.found: list[Settles] = []
        self.open = True


# The changes on their way to disk that the request being handled must be answered after (see collecting()).
_pending: ContextVar[_Collecting | None] = ContextVar("anvilfs_pending_writes", default=None)


def answer_after(settles: Settles) -> None:
    """A change on its way to disk (the storage's Commit) that the request being handled, if any, must not
    be answered before: the server waits for it. Outside a request (a turn's output) nothing waits."""
    collected = _pending.get()
    if collected is not None and collected.open:  # closed: a task the request started, which copied its context
        collected.found.append(settles)


@contextmanager
def collecting() -> Iterator[list[Settles]]:
    """Around the handling of a request that may change state: gathers what answer_after() was given, so
    that every change a write makes is on disk before the write is answered, whichever domain made it.

    A task started meanwhile (a session's runner) copies this context: closing the collection when the
    handling ends keeps that task's later changes out of it."""
    collected = _Collecting()
    token = _pending.set(collected)
    try:
        yield collected.found
    finally:
        collected.open = False
        _pending.reset(token)


class _AllOf:
    __slots__ = ("_each",)

    def __init__(self, each: list[Settles]):
        self._each = each

    async def wait(self) -> None:
        for one in self._each:  # in order: the first failure is the one reported
            await one.wait()


def on_disk(pending: list[Settles], what: str) -> Later:
    """The Later a request's answer waits on: all its changes on disk, or EIO naming `what` was not saved."""
    return Later(_AllOf(pending), lambda exc: AnvilError(
        f"{what} not saved: the disk refused it ({exc.strerror or exc}); see events"))
