"""Fixtures of the worktree engine's tests: a real repository in tmp_path, and the state directory's worktrees/."""

from __future__ import annotations

import pytest

from harness.worktrees import make_repo


@pytest.fixture
def repo(tmp_path) -> str:
    """A repository on main with README and shared.txt, main checked out and clean."""
    return make_repo(tmp_path / "repo")


@pytest.fixture
def root(tmp_path) -> str:
    """The state directory's worktrees/."""
    return str(tmp_path / "state" / "worktrees")
