"""Fixtures of the git history tests: a state directory, its database, and histories running for a test."""

from __future__ import annotations

import pytest
import trio

from anvilfs.storage import GitHistory, PrivateDir
from harness.git_history import DEADLINE, state_db, within_real_seconds


@pytest.fixture
def state(tmp_path):
    return tmp_path / "state"


@pytest.fixture
def db(state):
    """STATE/anvilfs.db with the history's tables, as the server opens it."""
    with state_db(state) as database:
        yield database


@pytest.fixture
async def started(state, db):
    """start(**options) -> (root, history) with history.run running for the test."""
    histories = []
    async with trio.open_nursery() as nursery:
        async def start(**options):
            root = PrivateDir(state)
            history = GitHistory(root, db, **options)
            histories.append(history)
            await within_real_seconds(DEADLINE, "history.run starting", lambda: nursery.start(history.run))
            return root, history
        try:
            yield start
        finally:
            nursery.cancel_scope.cancel()
    for history in histories:
        history.close()
