"""Shared fixtures. ``anvil_server``: a running ``anvilfs serve`` (tests/harness/server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.server import AnvilServer, anvil_server as _anvil_server


@pytest.fixture
def anvil_server() -> Iterator[AnvilServer]:
    with _anvil_server() as srv:
        yield srv
        # shown by pytest only when the test failed ("Captured stdout teardown")
        print(srv.trace_tail())
