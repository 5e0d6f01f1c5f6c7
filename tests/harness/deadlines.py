"""Deadlines for the waits in tests: a wait that does not end fails, saying what it awaited.

    with within(10, "the turn to end"):
        await session.changes.wait_changed(version)

Under the ``autojump_clock`` fixture the seconds are virtual: a wait that
nothing will ever end fails at once instead of after ``seconds`` of real time.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

import trio

WAIT = 30  # seconds: no wait in these tests should come near it


@contextlib.contextmanager
def within(seconds: float, what: str) -> Iterator[None]:
    """``trio.fail_after``, but failing with an AssertionError that names what was awaited."""
    try:
        with trio.fail_after(seconds):
            yield
    except trio.TooSlowError:
        raise AssertionError(f"timed out after {seconds}s waiting for {what}") from None


def describe(predicate: Callable[[], object]) -> str:
    """The source line of a predicate (usually a lambda), for a failure message."""
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        return repr(predicate)
