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
    """Every changed or new file by its own path: a new file in a new directory is that file, not the directory
    (`work/2.txt`, not `work/` when the worktree's base has no work/ yet)."""
    return git(cwd, "status", "--porcelain", "--untracked-files=all")


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


def kept(repo, commit: str, branch: str) -> bool:
    """Whether `commit` is reachable from main or `branch`, or (rebased) still in the branch's reflog."""
    for ref in ("main", branch):
        done = subprocess.run(["git", "merge-base", "--is-ancestor", commit, ref], cwd=repo, env=git_env(),
                              timeout=DEADLINE)
        if done.returncode == 0:
            return True
    return commit in git(repo, "reflog", "show", "--format=%H", branch, "--").split()


def check_repository(repo, work: dict[str, tuple[str, str]], tips: dict[str, str], on_main: bool = True) -> None:
    """What the merge queue must leave, whatever happened: every worktree clean and no operation in progress,
    fsck clean, REPO on main, main linear, each bead's work (`work`: bead -> (file, text)) in main or its
    branch, each completed commit (`tips`) kept, no bead's commit in main twice."""
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = line.split(" ", 1)[1]
            assert mid_operation(path) == [] and status(path) == "", f"{path}: {mid_operation(path)} {status(path)}"
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, env=git_env(), capture_output=True, text=True,
                          timeout=DEADLINE * 2)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main" or not on_main
    assert git(repo, "rev-list", "--merges", "main") == "", "the base's history must stay linear"
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    for bead, (name, text) in work.items():
        # the engine's tests commit with the bead as the subject, anvilfs's `complete` with "BEAD: TITLE"
        times = sum(1 for subject in subjects if subject == bead or subject.startswith(bead + ":"))
        assert times <= 1, f"{bead} is in main {times} times"
        found = [ref for ref in ("main", f"anvil/bead/{bead}") if git(repo, "show", f"{ref}:{name}", check=False)
                 + "\n" == text]
        assert found, f"the work of {bead} is neither in main nor in its branch"
        assert kept(repo, tips[bead], f"refs/heads/anvil/bead/{bead}"), f"{bead}'s commit is lost"


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
