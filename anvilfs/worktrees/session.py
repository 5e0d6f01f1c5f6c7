"""A session's worktree: made on its own branch, a bead's branch checked out at each claim, committed at complete.

The worktree's directory never changes (the agent CLIs keep conversations
per directory); its branch does. Between beads it sits on its idle branch,
or detached at the last bead's tip: `complete` detaches it so that the merge
step may move the bead's branch, which git would otherwise show in this
worktree as the reverse of the merge, uncommitted.
"""

from __future__ import annotations

import os

from ..faults import kill_point
from .errors import BadName, DirtyWorktree, GitFailed, UnresolvedConflict
from .git import Git, Identity
from .model import Claimed, Completed, SessionWorktree
from .names import bead_branch, check_base, free_slot, resolve
from .status import changes, contains, holder_of, in_progress, registered, unmerged


def author_of(session: str) -> Identity:
    return Identity(session, f"{session}@anvilfs")


async def toplevel(git: Git, repo: str) -> str:
    """REPO's main worktree: where its own checkout is, whatever subdirectory or linked worktree was named."""
    if not os.path.isdir(repo):
        raise BadName(f"repository {repo!r} is not a directory: give the path of a git repository")
    common = await git.run(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if common.status:
        raise BadName(f"{repo} is not in a git repository: give the path of one (git init makes one)")
    main = await registered(git, repo)
    return main[0].path if main else os.path.realpath(repo)


async def create(git: Git, repo: str, root: str, session: str, base: str | None = None) -> SessionWorktree:
    """A new worktree for `session` under `root`, on its own branch made from the base's tip."""
    top = await toplevel(git, repo)  # first: a directory that is no repository is said to be one plainly
    checked = await check_base(git, repo, base)  # REPO as named: the branch its own checkout has
    repo = top
    os.makedirs(root, exist_ok=True)
    taken = {w.path for w in await registered(git, repo)}
    path, branch = await free_slot(git, repo, os.path.realpath(root), session, taken)
    await git.out(repo, "worktree", "add", "--quiet", "--no-track", "-b", branch, path, checked.tip)
    return SessionWorktree(session, repo, path, checked.branch, branch)


async def current_branch(git: Git, path: str) -> str | None:
    done = await git.run(path, "symbolic-ref", "--quiet", "--short", "HEAD")
    return done.stdout.strip() if done.status == 0 else None


async def claim(git: Git, wt: SessionWorktree, bead: str) -> Claimed:
    """Check out the bead's branch: new from the base's tip, or kept from an earlier round with the base merged in."""
    branch = bead_branch(bead)
    base_tip = await _base_tip(git, wt)
    if await current_branch(git, wt.path) == branch and (await changes(git, wt.path) or await in_progress(
            git, wt.path)):
        return Claimed(bead, branch, base_tip, True, await unmerged(git, wt.path))  # claimed already: leave it be
    await _refuse_dirty(git, wt)
    tip = await resolve(git, wt.repo, f"refs/heads/{branch}")
    if tip is not None and not await contains(git, wt.repo, tip, base_tip):
        return await _resume(git, wt, bead, branch, base_tip)
    await _check_free(git, wt, branch)
    if tip is None:
        await git.out(wt.path, "switch", "--quiet", "--no-track", "-c", branch, base_tip)
    else:  # reopened after its branch was merged, or asked again after a crash: nothing of it is lost by
        # starting again at the base's tip. Never move the branch under its own checkout: the files would stay
        # at the old tip, and `complete` would commit the base's newer files as deleted.
        if await current_branch(git, wt.path) == branch:
            await git.out(wt.path, "switch", "--quiet", "--detach")
        await git.out(wt.repo, "update-ref", "-m", f"anvilfs: bead {bead} reopened", f"refs/heads/{branch}",
                      base_tip, tip)
        await git.out(wt.path, "switch", "--quiet", branch)
    return Claimed(bead, branch, base_tip, False)


async def _resume(git: Git, wt: SessionWorktree, bead: str, branch: str, base_tip: str) -> Claimed:
    """The bead's kept branch back in the worktree, the base's tip merged into it; conflicts left marked."""
    if await current_branch(git, wt.path) != branch:
        await _check_free(git, wt, branch)
        await git.out(wt.path, "switch", "--quiet", branch)
    if await contains(git, wt.repo, base_tip, f"refs/heads/{branch}"):
        return Claimed(bead, branch, base_tip, True)
    done = await git.run(wt.path, "merge", "--no-ff", "--no-edit", "-m",
                         f"{bead}: merge {wt.base} into the bead's branch", base_tip, author=author_of(wt.session))
    conflicts = await unmerged(git, wt.path)
    if done.status and not conflicts:
        await git.run(wt.path, "merge", "--abort")
        raise GitFailed(f"merging {wt.base} into {branch} failed in {wt.path}: {done.tail(200)}", detail=done.tail())
    return Claimed(bead, branch, base_tip, True, conflicts)


async def complete(git: Git, wt: SessionWorktree, bead: str, title: str = "") -> Completed:
    """Commit what the agent left on the bead's branch (hooks not run), detach, say what the branch has of its own."""
    branch = bead_branch(bead)
    base_tip = await _base_tip(git, wt)
    tip = await resolve(git, wt.repo, f"refs/heads/{branch}")
    on = await current_branch(git, wt.path)
    head = await resolve(git, wt.path, "HEAD")
    if on != branch and not (on is None and tip is not None and head == tip):
        raise DirtyWorktree(f"claim bead {bead} in {wt.path}, or switch it back to {branch}: it is on "
                            f"{on or 'a detached HEAD'}, and complete commits only the bead's branch")
    committed = None
    if on == branch:
        committed = await _commit_leftovers(git, wt, bead, title)
        kill_point("worktrees-complete-committed")
        await git.out(wt.path, "switch", "--quiet", "--detach")  # frees the branch for the merge step
        tip = await resolve(git, wt.repo, f"refs/heads/{branch}")
    own = int(await git.out(wt.repo, "rev-list", "--count", f"{base_tip}..{tip}", "--"))
    return Completed(bead, branch, tip or "", committed, own)


async def work_of(git: Git, wt: SessionWorktree, bead: str) -> tuple[int, tuple[str, ...]]:
    """What the bead's branch holds before `complete`: its commits the base lacks, and the worktree's
    uncommitted changes (while the branch is checked out there); nothing changed."""
    branch = bead_branch(bead)
    tip = await resolve(git, wt.repo, f"refs/heads/{branch}")
    if tip is None:
        return 0, ()
    own = int(await git.out(wt.repo, "rev-list", "--count", f"{await _base_tip(git, wt)}..{tip}", "--"))
    dirty = await changes(git, wt.path) if await current_branch(git, wt.path) == branch else ()
    return own, dirty


async def _commit_leftovers(git: Git, wt: SessionWorktree, bead: str, title: str) -> str | None:
    merging = await in_progress(git, wt.path)
    if merging not in (None, "merge"):
        raise DirtyWorktree(f"finish or abort the {merging} in {wt.path} first, then complete {bead}")
    await git.out(wt.path, "add", "--all")
    kill_point("worktrees-complete-added")
    if merging:
        await _refuse_markers(git, wt, bead)
    elif await git.ok(wt.path, "diff", "--no-ext-diff", "--cached", "--quiet"):
        return None  # nothing left uncommitted
    subject = f"{bead}: {title}" if title else bead
    body = (f"Committed by anvilfs: what session {wt.session} left uncommitted when it completed bead {bead}."
            "\nThe repository's hooks were not run; the merge queue runs the configured gates.")
    await git.out(wt.path, "commit", "--quiet", "--no-verify", "-m", subject, "-m", body,
                  author=author_of(wt.session))
    return await git.out(wt.path, "rev-parse", "HEAD")


async def _refuse_markers(git: Git, wt: SessionWorktree, bead: str) -> None:
    """Refuse while a file staged for the merge still carries conflict markers (git add resolved it only in name)."""
    done = await git.run(wt.path, "diff", "--no-ext-diff", "--no-textconv", "--cached", "--check", "HEAD")
    files = tuple(sorted({line.split(":", 1)[0] for line in done.stdout.splitlines()
                          if "leftover conflict marker" in line}))
    if files:
        raise UnresolvedConflict(f"resolve the conflicts of bead {bead} first: {', '.join(files[:5])} "
                                 f"{'still carry' if len(files) > 1 else 'still carries'} conflict markers", files)


async def _base_tip(git: Git, wt: SessionWorktree) -> str:
    tip = await resolve(git, wt.repo, f"refs/heads/{wt.base}")
    if tip is None:
        raise BadName(f"the base {wt.base!r} of session {wt.session} is gone from {wt.repo}: restore the branch")
    return tip


async def _refuse_dirty(git: Git, wt: SessionWorktree) -> None:
    dirty = await changes(git, wt.path)
    operation = await in_progress(git, wt.path)
    if dirty or operation:
        what = f"a {operation} in progress" if operation else f"uncommitted work ({', '.join(dirty[:5])})"
        raise DirtyWorktree(f"complete the earlier bead first: {wt.path} has {what}", dirty)


async def _check_free(git: Git, wt: SessionWorktree, branch: str) -> None:
    holder = await holder_of(git, wt.repo, branch)
    if holder is not None and holder.path != os.path.realpath(wt.path):
        raise DirtyWorktree(f"complete the bead in {holder.path} first: its branch {branch} is checked out there")
