"""The merge worktree: scratch space of the merge queue, one per repository, found clean before every step.

It holds nobody's work: every step starts by aborting whatever a killed
step left in progress there, resetting it and cleaning it (ignored files
too), so it can never carry one bead's files into another's gates.
"""

from __future__ import annotations

import hashlib
import os
import shutil

from .git import Git
from .model import Repaired
from .status import holder_of, in_progress, registered
from .steplock import clear_journal, read_journal

ABORT = {"rebase": ("rebase", "--abort"), "merge": ("merge", "--abort"),
         "cherry-pick": ("cherry-pick", "--abort"), "revert": ("revert", "--abort")}


def merge_path_for(root: str, repo: str) -> str:
    """root/.merge-HASH: a name no session can have (they never start with '.'), one per repository."""
    digest = hashlib.sha256(os.path.realpath(repo).encode()).hexdigest()[:12]
    return os.path.join(os.path.realpath(root), f".merge-{digest}")


async def ensure(git: Git, repo: str, path: str, commit: str) -> None:
    """The merge worktree exists, registered with REPO, detached (it never holds a branch)."""
    known = {w.path: w for w in await registered(git, repo)}
    if path in known and not known[path].missing:
        return
    if path not in known and os.path.isdir(path):
        shutil.rmtree(path)  # a `worktree add` a crash interrupted, before git registered it
    os.makedirs(os.path.dirname(path), exist_ok=True)
    await git.out(repo, "worktree", "add", "--quiet", "--force", "--detach", path, commit)


async def scrub(git: Git, repo: str, path: str) -> tuple[str, ...]:
    """Abort what a killed step left in progress, drop its stale locks, reset and clean: as if new.

    Only under the step lock: then no git of ours runs, and only ours run in the merge worktree, so
    every lock file in its own admin directory was left by a git that died.
    """
    known = {w.path: w for w in await registered(git, repo)}
    if path not in known or known[path].missing:
        return ()
    found = await git.run(path, "rev-parse", "--absolute-git-dir")
    if found.status:  # a HEAD a power cut left torn: git no longer sees a repository there
        await _remove(git, repo, path)
        return (f"{path}: removed, to be made again ({found.tail(200)})",)
    admin = found.stdout.strip()
    for top, _, names in os.walk(admin):  # index.lock, HEAD.lock, ORIG_HEAD.lock ...: git died holding them
        for name in names:
            if name.endswith(".lock"):
                os.unlink(os.path.join(top, name))
    aborted = []
    operation = await in_progress(git, path)
    if operation:
        await git.run(path, *ABORT[operation])
        aborted.append(f"{path}: {operation}")
    if await in_progress(git, path):  # an abort that could not: clear git's own record of it
        for marker in ("rebase-merge", "rebase-apply"):
            shutil.rmtree(os.path.join(admin, marker), ignore_errors=True)
        for marker in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "CHERRY_PICK_HEAD", "REVERT_HEAD"):
            if os.path.exists(os.path.join(admin, marker)):
                os.unlink(os.path.join(admin, marker))
    await git.out(path, "reset", "--quiet", "--hard")
    await git.out(path, "clean", "-ffdxq")
    return tuple(aborted)


async def _remove(git: Git, repo: str, path: str) -> None:
    """The merge worktree gone, registration and all (twice --force: it may be locked, mid-`worktree add`)."""
    await git.run(repo, "worktree", "remove", "--force", "--force", path)
    if os.path.isdir(path):
        shutil.rmtree(path)  # git could not: the registration, its directory missing, is reused by ensure()


async def finish_journal(git: Git, repo: str, path: str) -> tuple[str, ...]:
    """Finish a fast-forward of REPO's checkout that stopped between its files and its branch (a power cut)."""
    record = read_journal(path)
    if record is None:
        return ()
    done: tuple[str, ...] = ()
    holder = await holder_of(git, repo, record["base"])
    base_ref = f"refs/heads/{record['base']}"
    current = (await git.run(repo, "rev-parse", "--verify", "--quiet", base_ref)).stdout.strip()
    if holder is not None and not holder.missing and current == record["old"] and record["holder"] == holder.path \
            and await git.ok(holder.path, "diff-index", "--cached", "--quiet", record["new"], "--"):
        await git.out(repo, "update-ref", "-m", f"anvilfs: finish merging bead {record['bead']}", base_ref,
                      record["new"], record["old"])
        done = (f"{holder.path}: {record['base']} moved to {record['new'][:12]}, as its files already were",)
    await clear_journal(path)
    return done


def stale_locks(repo_git_dir: str, refs: tuple[str, ...], holder_git_dir: str | None) -> tuple[str, ...]:
    """Lock files in REPO a killed step may have left: reported, never removed (one may be the user's git)."""
    paths = [os.path.join(repo_git_dir, ref + ".lock") for ref in refs]
    if holder_git_dir:
        paths.append(os.path.join(holder_git_dir, "index.lock"))
    return tuple(p for p in paths if os.path.exists(p))


async def repair_worktree(git: Git, repo: str, path: str) -> Repaired:
    aborted = await scrub(git, repo, path)
    finished = await finish_journal(git, repo, path)
    return Repaired(aborted, finished)
