"""The git history refuses a repository it did not make (a planted config, commondir, a .git elsewhere), with real git."""

from __future__ import annotations

import os
import subprocess

import pytest

from anvilfs.storage import GitHistory, PrivateDir, StorageError
from anvilfs.storage.gitrepo import CONFIG
from harness.git_history import git, make_history


def plant_config(state, marker) -> bytes:
    """A config whose filter and fsmonitor run a command on a plain `git add`, as an attacker would plant it."""
    planted = CONFIG + (f'\tfsmonitor = "touch {marker}"\n[filter "x"]\n\tclean = "touch {marker}; cat"\n').encode()
    (state / ".git" / "config").write_bytes(planted)
    (state / "beads" / ".gitattributes").write_text("* filter=x\n")
    (state / "beads" / "a.toml").write_text("x = 1\n")
    return planted


def test_a_planted_config_is_refused_and_nothing_is_run(state, db, tmp_path):
    make_history(state)
    marker = tmp_path / "pwned"
    planted = plant_config(state, marker)
    assert not marker.exists()
    with pytest.raises(StorageError, match=r"\.git/config is not the one anvilfs wrote; anvilfs will not run git"):
        GitHistory(PrivateDir(state), db)
    assert not marker.exists()
    assert (state / ".git" / "config").read_bytes() == planted  # refused, not repaired behind the user's back


def test_the_planted_config_would_have_run_its_command_under_plain_git(state, tmp_path):
    """The planted config of the test above is a real threat: plain `git add` runs it."""
    make_history(state)
    marker = tmp_path / "pwned"
    plant_config(state, marker)
    git(state, "add", "-A", "--", "beads")
    assert marker.exists()


def test_a_missing_config_is_refused(state, db):
    make_history(state)
    (state / ".git" / "config").unlink()
    with pytest.raises(StorageError, match=r"\.git/config is missing"):
        GitHistory(PrivateDir(state), db)


@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_git_file_or_link_pointing_elsewhere_is_refused(state, db, tmp_path, kind):
    elsewhere = tmp_path / "elsewhere.git"
    subprocess.run(["git", "init", "-q", "--bare", str(elsewhere)], check=True, capture_output=True)
    PrivateDir(state).close()
    if kind == "file":
        (state / ".git").write_text(f"gitdir: {elsewhere}\n")
    else:
        (state / ".git").symlink_to(elsewhere)
    with pytest.raises(StorageError, match=r"\.git is not a directory .* move it away"):
        GitHistory(PrivateDir(state), db)


def test_a_second_history_on_the_same_state_is_refused_while_the_first_holds_it(state, db):
    first = GitHistory(PrivateDir(state), db)
    try:
        with pytest.raises(StorageError, match="another anvilfs server .* is using the history"):
            GitHistory(PrivateDir(state), db, lock_timeout=0)
    finally:
        first.close()
    GitHistory(PrivateDir(state), db, lock_timeout=0).close()  # free again once the first is closed


@pytest.mark.parametrize("redirect", ["commondir", "gitdir", "worktrees"])
def test_a_planted_commondir_is_refused_and_nothing_is_run(state, db, tmp_path, redirect):
    """git reads its config from $GIT_DIR/commondir when that exists: the byte check of .git/config is not enough."""
    make_history(state)
    evil = tmp_path / "evil.git"
    subprocess.run(["git", "init", "-q", "--bare", str(evil)], check=True, capture_output=True)
    marker = tmp_path / "pwned"
    with open(evil / "config", "a") as config:
        config.write(f'[filter "x"]\n\tclean = "touch {marker}; cat"\n')
    (state / "beads" / ".gitattributes").write_text("* filter=x\n")
    (state / "beads" / "a.toml").write_text("x = 1\n")
    if redirect == "worktrees":
        (state / ".git" / "worktrees").mkdir()
    else:
        (state / ".git" / redirect).write_text(f"{evil}\n")
    with pytest.raises(StorageError, match=f"has {redirect}, which anvilfs never makes"):
        GitHistory(PrivateDir(state), db)
    assert not marker.exists()


def test_git_runs_with_its_common_dir_pinned(state):
    from anvilfs.storage.gitrepo import _git_environment

    env = _git_environment(str(state))
    assert env["GIT_COMMON_DIR"] == env["GIT_DIR"] == os.path.join(str(state), ".git")
