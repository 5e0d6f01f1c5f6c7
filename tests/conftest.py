"""Shared fixtures and the suite's rules.

``anvil_server``: a running ``anvilfs serve`` (tests/harness/server.py).
``running``: starts in-process Apps (App(**kwargs)) whose tasks run for the test.

Each test gets pytest-timeout's backstop (pyproject.toml): ``SLOW`` seconds for
vm, clients, agents and web tests, which build guest assets, client venvs, install agent CLIs or
start Chromium on first use, and for the tests of plan9port's tools (fixture ``p9bin``), which build
them on first use: a build waited for under the 120 s backstop failed every one of them on a busy machine.
A hung trio test is ended by the thread method (stacks dumped, the run
stopped), since a signal raised inside trio's run loop breaks it; a hung sync
test by a signal, which fails that test alone. Missing programs skip a test
saying what to install, or fail it under CI=true (harness/prerequisites.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
import trio

from anvilfs.app import App
from anvilfs.server import connection
from harness import prerequisites
from harness.server import AnvilServer, anvil_server as _anvil_server

SLOW = 1200  # seconds: a first run downloads a kernel and builds venvs


@pytest.fixture(autouse=True)
def _one_turn_per_batch(monkeypatch):
    """A connection served in-process holds the loop for at most connection.TURN (4 ms of real time) of a
    batch; on a loaded machine that turn can end between two frames of one send, and a test of what one batch
    does (a flush and a request reusing its tag; replies in one send) met two batches (CI, 2026-12-06). The
    turn is endless in tests; the tests of the turn set their own. A server in a subprocess keeps its 4 ms."""
    monkeypatch.setattr(connection, "TURN", float("inf"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue  # the test chose its own
        slow = any(item.get_closest_marker(mark) for mark in ("vm", "clients", "agents", "web")) \
            or "p9bin" in getattr(item, "fixturenames", ())  # builds plan9port on first use (about 40 s alone)
        method = "thread" if inspect.iscoroutinefunction(getattr(item, "obj", None)) else "signal"
        item.add_marker(pytest.mark.timeout(SLOW if slow else None, method=method))


def pytest_runtest_setup(item: pytest.Item) -> None:
    prerequisites.check(item)


@pytest.fixture
async def running():
    async with trio.open_nursery() as nursery:
        async def start(**kwargs) -> App:
            app = App(**kwargs)
            await nursery.start(app.run)
            return app
        yield start
        nursery.cancel_scope.cancel()


@pytest.fixture
def anvil_server() -> Iterator[AnvilServer]:
    with _anvil_server() as srv:
        yield srv
        # shown by pytest only when the test failed ("Captured stdout teardown")
        print(srv.trace_tail())
