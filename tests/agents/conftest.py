"""tests/agents: the real agent CLIs driven through anvilfs against stub model servers (drive.py, stubs/).

Every test here is marked ``agents`` (a long backstop timeout: the first use
of a CLI installs it) and gets ``stub``, a StubModels stopped after the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from stubs import StubModels


@pytest.hookimpl(tryfirst=True)  # before the root conftest gives the marked tests their timeout
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.agents)


@pytest.fixture
def stub() -> Iterator[StubModels]:
    with StubModels() as models:
        yield models
