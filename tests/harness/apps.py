"""In-process apps for tests that drive sessions without 9P."""

from __future__ import annotations

import trio

from .deadlines import WAIT, describe, within


async def until(predicate, what: str | None = None, *, timeout: float = WAIT) -> None:
    """Let the app's tasks run until predicate() holds; fail after ``timeout`` seconds.

    With autojump_clock, time moves by itself and the seconds are virtual.
    """
    with within(timeout, what or describe(predicate)):
        while not predicate():
            await trio.sleep(0.001)
