"""For the tests of the worktree engine (tests/domain/worktrees/): real repositories, git as the user runs it."""

from __future__ import annotations

import os
import subprocess

from anvilfs.worktrees import Git, SessionWorktree

DEADLINE = 30  # seconds: far beyond what git needs here; reached only when something is broken
GIT = Git(timeout=DEADLINE)


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C", GIT_AUTHOR_NAME="user",
               GIT_AUTHOR_EMAIL="user@example.org", GIT_COMMITTER_NAME="user", GIT_COMMITTER_EMAIL="user@example.org")
    return env


def git(cwd, *args: str, check: bool = True) -> str:
    """git as the user would run it, in `cwd`; its stdout (asserting success unless told not to)."""
    result = subprocess.run(["git", *args], cwd=str(cwd), env=git_env(), capture_output=True, text=True,
                            timeout=DEADLINE)
    if check:
        assert result.returncode == 0, f"git {' '.join(args)} in {cwd}: {result.stderr}"
    return result.stdout.strip()


def write(path, text: str) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w") as file:
        file.write(text)


def commit_file(cwd, name: str, text: str, message: str = "") -> str:
    write(os.path.join(cwd, name), text)
    git(cwd, "add", name)
    git(cwd, "commit", "-q", "-m", message or f"write {name}")
    return git(cwd, "rev-parse", "HEAD")


def tip(repo, ref: str) -> str:
    return git(repo, "rev-parse", "--verify", ref)


def status(cwd) -> str:
    return git(cwd, "status", "--porcelain")


def mid_operation(cwd) -> list[str]:
    admin = git(cwd, "rev-parse", "--absolute-git-dir")
    return [m for m in ("rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD")
            if os.path.exists(os.path.join(admin, m))]




def make_repo(path) -> str:
    """A repository on main with two files, main checked out and clean."""
    os.makedirs(path, exist_ok=True)
    git(path, "init", "-q", "--initial-branch=main")
    write(os.path.join(path, "README"), "hello\n")
    write(os.path.join(path, "shared.txt"), "one\ntwo\nthree\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return str(path)


def in_worktree(wt: SessionWorktree, name: str) -> str:
    return os.path.join(wt.path, name)


async def finished_bead(root_wt: SessionWorktree, bead: str, files: dict[str, str]):
    """Claim `bead` in the worktree, write `files` there as its agent would, complete it: the Completed."""
    from anvilfs.worktrees import claim, complete
    await claim(GIT, root_wt, bead)
    for name, text in files.items():
        write(os.path.join(root_wt.path, name), text)
    return await complete(GIT, root_wt, bead)


def entry_for(wt: SessionWorktree, bead: str):
    from anvilfs.worktrees import MergeEntry, bead_branch
    return MergeEntry(bead, bead_branch(bead), wt.repo, wt.base)
