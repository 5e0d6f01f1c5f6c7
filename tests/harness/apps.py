"""In-process apps for tests that drive sessions without 9P."""

from __future__ import annotations

import trio


async def until(predicate) -> None:
    """Let the app's tasks run until predicate() holds (with autojump_clock, time moves by itself)."""
    while not predicate():
        await trio.sleep(0.001)
