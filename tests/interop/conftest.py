"""Fixtures of the interop tests: the python of each third-party client's own venv (built once a run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import venvs  # as every test imports it: `tests.harness` would be a second copy of the module


@pytest.fixture(scope="session")
def py9p_python() -> Path:
    return venvs.ensure_client_venv("python-9p")


@pytest.fixture(scope="session")
def p9fs_python() -> Path:
    return venvs.ensure_client_venv("p9fs")
