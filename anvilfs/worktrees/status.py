"""Questions to git about a repository's worktrees: who has what checked out, what is uncommitted, what is stashed.

Every answer comes from git at the moment of asking, and a git that fails
raises: an unanswered question is never taken for "nothing there" (a
cleanup elsewhere read an exit 128 as zero commits and deleted the branch).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .git import Git

IN_PROGRESS = (("rebase-merge", "rebase"), ("rebase-apply", "rebase"), ("MERGE_HEAD", "merge"),
               ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"))


@dataclass(frozen=True, slots=True)
class Registered:
    """One worktree as `git worktree list --porcelain` tells it."""

    path: str
    head: str
    branch: str | None  # "main", not refs/heads/main; None when detached
    missing: bool  # git knows it, but its directory is gone (`prunable`)


async def registered(git: Git, repo: str) -> list[Registered]:
    text = await git.out(repo, "worktree", "list", "--porcelain", "-z")
    found = []
    for record in text.split("\0\0"):
        fields = dict((line.split(" ", 1) + [""])[:2] for line in record.split("\0") if line)
        if "worktree" not in fields or "bare" in fields:
            continue
        branch = fields.get("branch", "").removeprefix("refs/heads/") or None
        found.append(Registered(os.path.realpath(fields["worktree"]), fields.get("HEAD", ""), branch,
                                "prunable" in fields or not os.path.isdir(fields["worktree"])))
    return found


async def holder_of(git: Git, repo: str, branch: str) -> Registered | None:
    """The worktree that has `branch` checked out, if any (git lets only one)."""
    return next((w for w in await registered(git, repo) if w.branch == branch), None)


async def changes(git: Git, path: str, *, untracked: bool = True) -> tuple[str, ...]:
    """The paths with uncommitted changes (staged, unstaged, and untracked unless told not to; never ignored)."""
    mode = "--untracked-files=all" if untracked else "--untracked-files=no"
    text = await git.out(path, "status", "--porcelain=v1", "-z", "--no-renames", mode)
    return tuple(sorted({entry[3:] for entry in text.split("\0") if len(entry) > 3}))


async def unmerged(git: Git, path: str) -> tuple[str, ...]:
    return tuple(await git.lines(path, "diff", "--no-ext-diff", "--name-only", "--diff-filter=U"))


async def git_dir(git: Git, path: str) -> str:
    return await git.out(path, "rev-parse", "--absolute-git-dir")


async def in_progress(git: Git, path: str) -> str | None:
    """The operation a worktree is in the middle of (rebase, merge, cherry-pick, revert), if any."""
    where = await git_dir(git, path)
    return next((name for marker, name in IN_PROGRESS if os.path.exists(os.path.join(where, marker))), None)


async def being_rebased(git: Git, repo: str) -> dict[str, str]:
    """The branches a rebase in progress will write when it ends (any worktree's): branch -> its admin dir.

    git shows such a worktree as detached, so it holds no branch; moving the
    branch under the rebase would have the rebase's end overwrite our move.
    """
    common = await git.out(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    admins = [common] + [os.path.join(common, "worktrees", name) for name in
                         (os.listdir(os.path.join(common, "worktrees")) if os.path.isdir(
                             os.path.join(common, "worktrees")) else [])]
    found = {}
    for admin in admins:
        for marker in ("rebase-merge", "rebase-apply"):
            try:
                with open(os.path.join(admin, marker, "head-name")) as file:
                    found[file.read().strip().removeprefix("refs/heads/")] = admin
            except (FileNotFoundError, NotADirectoryError):
                pass
    return found


async def contains(git: Git, repo: str, commit: str, ref: str) -> bool:
    """Whether `commit` is reachable from `ref` (the base has it)."""
    return await git.ok(repo, "merge-base", "--is-ancestor", commit, ref)


async def ahead(git: Git, repo: str, base: str, ref: str) -> int:
    """How many commits `ref` has that `base` lacks."""
    return int(await git.out(repo, "rev-list", "--count", f"{base}..{ref}", "--"))


async def stashes_of(git: Git, repo: str, branch: str | None, head: str) -> tuple[str, ...]:
    """The stash entries made on `branch`, or detached on top of `head`: work kept outside any branch.

    A stash records the branch it was made on only in its message ("WIP on
    BRANCH: ..." or "On BRANCH: ...", "(no branch)" when detached), and the
    commit it was made on as its first parent.
    """
    done = await git.run(repo, "stash", "list", "--format=%gd%x00%P%x00%gs")
    if done.status:
        return ()  # no refs/stash: git says so with a non-zero exit on old versions
    found = []
    for line in done.stdout.splitlines():
        name, parents, subject = (line.split("\0") + ["", ""])[:3]
        on_branch = branch is not None and (f" on {branch}:" in f" {subject}" or f"On {branch}:" in subject)
        detached_here = "(no branch):" in subject and parents.split(" ")[0] == head
        if on_branch or detached_here:
            found.append(name)
    return tuple(found)
