"""The worktrees anvilfs made, what state each is in, and a prune that removes only what holds nothing.

Ours are the worktrees under ROOT (the state directory's worktrees/) and
nothing else: a worktree or branch of the user's is never listed, never
removed. Removal never forces: a worktree goes only when it is clean, has
no stash, and everything it and its branch have is in the base; then
`git worktree remove` (which itself refuses a dirty tree) and a branch
deletion that names the commit it expects (`update-ref -d REF OLD`).
`git worktree prune`, which forgets every missing worktree of the
repository, is never run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .git import Git
from .model import SessionWorktree, WorktreeInfo, WorktreeState
from .names import BEAD_PREFIX, SESSION_PREFIX, resolve
from .status import Registered, changes, contains, in_progress, registered, stashes_of

MERGES = "merges"  # the session name the merge worktrees are listed under (a reserved name)


async def list_worktrees(git: Git, repo: str, root: str, records: Iterable[SessionWorktree],
                         live: Iterable[str], default_base: str) -> list[WorktreeInfo]:
    """One line per worktree under `root`: PATH SESSION BRANCH STATE."""
    root = os.path.realpath(root)
    by_path = {os.path.realpath(r.path): r for r in records}
    alive = set(live)
    ours = [w for w in await registered(git, repo) if os.path.dirname(w.path) == root]
    found = [await _info(git, repo, w, by_path.get(w.path), alive, default_base) for w in ours]
    known = {w.path for w in ours}
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, name)
        if os.path.isdir(path) and path not in known:
            found.append(WorktreeInfo(path, _session_of(name), "-", WorktreeState.ORPHANED,
                                      "a directory git does not know as a worktree: look, then remove it by hand"))
    return sorted(found, key=lambda info: info.path)


async def _info(git: Git, repo: str, w: Registered, record: SessionWorktree | None, alive: set[str],
                default_base: str) -> WorktreeInfo:
    name = os.path.basename(w.path)
    session = MERGES if name.startswith(".merge-") else record.session if record else _session_of(name)
    branch = w.branch or "(detached)"
    if w.missing:
        return WorktreeInfo(w.path, session, branch, WorktreeState.ORPHANED, "its directory is gone")
    if session == MERGES or session in alive:
        return WorktreeInfo(w.path, session, branch, WorktreeState.ACTIVE)
    why = await kept_because(git, repo, w, record.base if record else default_base)
    state = WorktreeState.UNMERGED if why else WorktreeState.MERGED
    return WorktreeInfo(w.path, session, branch, state, why)


def _session_of(name: str) -> str:
    return name.split("@", 1)[0]


async def kept_because(git: Git, repo: str, w: Registered, base: str) -> str:
    """Why removing this worktree would lose something ('' if nothing would be lost)."""
    base_ref = f"refs/heads/{base}"
    if await resolve(git, repo, base_ref) is None:
        return f"its base {base} is gone: nothing can be called merged"
    dirty = await changes(git, w.path)
    if dirty:
        return f"uncommitted changes: {', '.join(dirty[:3])}"
    operation = await in_progress(git, w.path)
    if operation:
        return f"a {operation} in progress"
    for ref in filter(None, (w.head, w.branch and f"refs/heads/{w.branch}")):
        if not await contains(git, repo, ref, base_ref):
            return f"{'HEAD' if ref == w.head else w.branch} has commits {base} lacks"
    stashes = await stashes_of(git, repo, w.branch, w.head)
    return f"stashed work: {', '.join(stashes)}" if stashes else ""


async def remove_if_merged(git: Git, repo: str, path: str, base: str) -> str:
    """Remove the worktree at `path` and its idle branch if that loses nothing: '' then; else why it is kept."""
    path = os.path.realpath(path)
    w = next((r for r in await registered(git, repo) if r.path == path), None)
    if w is None or w.missing:
        return f"{path} is not a worktree of {repo} with its directory: nothing removed"
    why = await kept_because(git, repo, w, base)
    if why:
        return why
    await git.out(repo, "worktree", "remove", path)  # never --force: git refuses a dirty tree itself
    idle = _idle_branch(os.path.basename(path))
    await _delete_if_merged(git, repo, idle, base)
    if w.branch and w.branch != idle:
        await _delete_if_merged(git, repo, w.branch, base)
    return ""


def _idle_branch(name: str) -> str:
    session, _, n = name.partition("@")
    return SESSION_PREFIX + session + (f"@{n}" if n else "")


async def _delete_if_merged(git: Git, repo: str, branch: str, base: str) -> bool:
    tip = await resolve(git, repo, f"refs/heads/{branch}")
    if tip is None or not branch.startswith((SESSION_PREFIX, BEAD_PREFIX)):
        return False
    if not await contains(git, repo, tip, f"refs/heads/{base}"):
        return False
    if any(w.branch == branch for w in await registered(git, repo)):
        return False
    if await stashes_of(git, repo, branch, tip):
        return False
    done = await git.run(repo, "update-ref", "-m", "anvilfs: prune merged branch", "-d", f"refs/heads/{branch}", tip)
    return done.status == 0


async def prune(git: Git, repo: str, root: str, records: Iterable[SessionWorktree], live: Iterable[str],
                base: str) -> tuple[list[str], list[str]]:
    """Remove the merged, clean worktrees under `root`, then the merged anvil/ branches no worktree holds.

    A session's idle branch goes only with its worktree: while the directory
    is there, the branch is part of it even when the worktree is detached.
    """
    records = list(records)
    removed = []
    for info in await list_worktrees(git, repo, root, records, live, base):
        if info.state is WorktreeState.MERGED:
            record = next((r for r in records if os.path.realpath(r.path) == info.path), None)
            if not await remove_if_merged(git, repo, info.path, record.base if record else base):
                removed.append(info.path)
    deleted = []
    for ref in await git.lines(repo, "for-each-ref", "--format=%(refname)", "refs/heads/anvil/"):
        branch = ref.removeprefix("refs/heads/")
        slot = branch.removeprefix(SESSION_PREFIX)
        if branch.startswith(SESSION_PREFIX) and os.path.lexists(os.path.join(root, slot)):
            continue
        if await _delete_if_merged(git, repo, branch, base):
            deleted.append(branch)
    return removed, deleted
