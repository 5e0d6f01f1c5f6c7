"""Shared fixtures.

``anvil_server``: a running ``anvilfs serve`` (tests/harness/server.py).
``running``: starts in-process Apps (App(**kwargs)) whose tasks run for the test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio

from anvilfs.app import App
from harness.server import AnvilServer, anvil_server as _anvil_server


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
