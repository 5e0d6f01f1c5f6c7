"""In-process apps for tests that drive sessions without 9P."""

from __future__ import annotations

import contextlib

import trio

from anvilfs.app import App

from .deadlines import WAIT, describe, within


@contextlib.asynccontextmanager
async def started(state, **kwargs):
    """An App(state_dir=state, **kwargs), started, and cancelled when the block ends."""
    async with trio.open_nursery() as nursery:
        app = App(state_dir=state, **kwargs)
        await nursery.start(app.run)
        yield app
        nursery.cancel_scope.cancel()


async def until(predicate, what: str | None = None, *, timeout: float = WAIT) -> None:
    """Let the app's tasks run until predicate() holds; fail after ``timeout`` seconds.

    With autojump_clock, time moves by itself and the seconds are virtual.
    """
    with within(timeout, what or describe(predicate)):
        while not predicate():
            await trio.sleep(0.001)
