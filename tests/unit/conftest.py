"""Fixtures of the unit tests of the state's database (test_database*.py): a private directory, a database in it."""

from __future__ import annotations

import pytest

from anvilfs.storage import PrivateDir
from anvilfs.storage.database import Database
from harness.stored import KV_SCHEMA


@pytest.fixture
def state(tmp_path):
    directory = PrivateDir(tmp_path / "state")
    yield directory
    directory.close()


@pytest.fixture
def db(state):
    database = Database(state, "test.db", KV_SCHEMA)
    yield database
    database.close()
