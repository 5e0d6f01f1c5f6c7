"""The merge step: one queue entry, in the merge worktree, then the base moved forward, or nothing changed at all.

    1. the step lock, then the repair of whatever a killed step left (mergework.py)
    2. already merged? (the base has the branch's tip): merged, nothing done, so never twice
    3. REPO has the base checked out with local changes: blocked, nothing touched
    4. rebase the branch onto the base's tip (or merge it, by configuration), detached
    5. setup and gates, each with its timeout; the tail of a failing one's output
    6. journal; the bead's branch moved to the result; the base moved with its expected old
       value (update-ref), or REPO's checkout fast-forwarded (merge --ff-only): a base that
       moved meanwhile is detected, never clobbered; journal cleared
    7. push the base to the remote, by configuration: a push that fails or hangs leaves the
       entry blocked, merged locally; its retry finds it merged and pushes again (and any later
       entry's push carries it too), so the remote is never ahead of the base, at most behind

A conflict or a failing gate aborts at 4 or 5: the merge worktree is reset,
the base and every branch and worktree are as they were. A crash anywhere
leaves either nothing moved, or the bead's branch rebased onto the old base
(the next step's rebase is then a no-op), or everything moved.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..faults import kill_point
from . import mergework
from .commands import run_all
from .errors import GitFailed, GitTimedOut
from .git import Git
from .model import MergeConfig, MergeEntry, MergeMode, MergeOutcome, MergeState, Repaired
from .names import resolve
from .status import Registered, being_rebased, changes, contains, holder_of, unmerged
from .steplock import clear_journal, held, write_journal

LOCK_WAIT = 30.0  # seconds to wait for a killed step's children to finish


async def repair(git: Git, repo: str, merge_path: str, lock_wait: float = LOCK_WAIT) -> Repaired:
    """At start: no merge worktree left mid-rebase or mid-merge, a half-done fast-forward finished."""
    async with held(git, merge_path, lock_wait) as locked:
        done = await mergework.repair_worktree(locked, repo, merge_path)
        common = await locked.out(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
        heads = os.path.join(common, "refs", "heads")
        locks = [os.path.join(top, name) for top, _, names in os.walk(heads) for name in names
                 if name.endswith(".lock")]
        if os.path.exists(os.path.join(common, "index.lock")):
            locks.append(os.path.join(common, "index.lock"))
        return Repaired(done.aborted, done.finished, tuple(sorted(locks)))


async def merge_step(git: Git, entry: MergeEntry, config: MergeConfig, merge_path: str,
                     lock_wait: float = LOCK_WAIT) -> MergeOutcome:
    async with held(git, merge_path, lock_wait) as locked:
        await mergework.repair_worktree(locked, entry.repo, merge_path)
        try:
            return await _step(locked, entry, config, merge_path)
        except GitFailed as exc:  # a state with its reason, never a stuck queue
            return MergeOutcome(MergeState.BLOCKED, exc.message, output=exc.detail)
        finally:
            await mergework.scrub(locked, entry.repo, merge_path)


async def _step(git: Git, entry: MergeEntry, config: MergeConfig, merge_path: str) -> MergeOutcome:
    old = await resolve(git, entry.repo, f"refs/heads/{entry.base}")
    tip = await resolve(git, entry.repo, f"refs/heads/{entry.branch}")
    if old is None or tip is None:
        gone = entry.base if old is None else entry.branch
        return MergeOutcome(MergeState.BLOCKED, f"branch {gone} is gone from {entry.repo}: restore it, or drop "
                                                f"{entry.bead}", base_before=old or "")
    if await contains(git, entry.repo, tip, old):
        merged = MergeOutcome(MergeState.MERGED, f"{entry.base} already has {entry.branch}", base_before=old,
                              base_after=old)
        return await _push(git, entry, config, merge_path, merged)
    holder = await holder_of(git, entry.repo, entry.base)
    blocked = await _blocked(git, entry, holder)
    if blocked:
        return MergeOutcome(MergeState.BLOCKED, blocked, base_before=old)
    await mergework.ensure(git, entry.repo, merge_path, old)
    kill_point("worktrees-before-rebase")
    built = await _build(git, entry, config, merge_path, old, tip)
    if isinstance(built, MergeOutcome):
        return built
    kill_point("worktrees-after-rebase")
    failed = await _gates(git, config, merge_path)
    if failed:
        return MergeOutcome(**{**failed, "base_before": old})
    moved = await _move(git, entry, merge_path, old, tip, built)
    return await _push(git, entry, config, merge_path, moved) if moved.state is MergeState.MERGED else moved


async def _blocked(git: Git, entry: MergeEntry, holder: Registered | None) -> str:
    """Why the base cannot move now (REPO's local changes, a rebase of it, the branch checked out), or ''."""
    branch_holder = await holder_of(git, entry.repo, entry.branch)
    if branch_holder is not None:
        return f"{entry.branch} is checked out in {branch_holder.path}: complete the bead there first"
    rebasing = await being_rebased(git, entry.repo)
    for branch in (entry.base, entry.branch):
        if branch in rebasing:
            return f"a rebase of {branch} is in progress ({rebasing[branch]}): finish or abort it there"
    if holder is None or holder.missing:
        return ""
    dirty = await changes(git, holder.path, untracked=False)
    if dirty:
        where = "REPO" if holder.path == entry.repo else holder.path
        return f"{where} has local changes on {entry.base} ({', '.join(dirty[:3])}): commit or stash them there"
    return ""


async def _build(git: Git, entry: MergeEntry, config: MergeConfig, path: str, old: str,
                 tip: str) -> str | MergeOutcome:
    """The commit the base would move to: the branch rebased onto `old` (squashed if it merged the base in),
    or merged into it."""
    if config.mode is MergeMode.MERGE:
        await git.out(path, "checkout", "--quiet", "--detach", "--force", old)
        done = await git.run(path, "merge", "--no-ff", "--no-edit", "-m",
                             f"Merge bead {entry.bead} ({entry.branch})", tip)
    elif int(await git.out(path, "rev-list", "--count", "--merges", f"{old}..{tip}", "--")):
        # a bead back from a conflict merged the base in: a rebase would drop that merge and its
        # resolution with it, and stop at the same conflict again; its changes as one commit instead
        await git.out(path, "checkout", "--quiet", "--detach", "--force", old)
        done = await git.run(path, "merge", "--squash", tip)
    else:
        await git.out(path, "checkout", "--quiet", "--detach", "--force", tip)
        done = await git.run(path, "rebase", "--no-autosquash", old)
    if done.status:
        files = await unmerged(git, path)
        kill_point("worktrees-in-conflict")  # the merge worktree mid-rebase: the repair's to abort
        if files:
            return MergeOutcome(MergeState.CONFLICT, f"{entry.branch} conflicts with {entry.base} in "
                                f"{', '.join(files[:5])}", files=files, output=done.tail(), base_before=old)
        return MergeOutcome(MergeState.BLOCKED, f"git {config.mode} of {entry.branch} failed: "
                            f"{done.tail(200)}", output=done.tail(), base_before=old)
    if not await git.ok(path, "diff", "--no-ext-diff", "--cached", "--quiet"):
        await _commit_squash(git, entry, path, old, tip)
    return await git.out(path, "rev-parse", "HEAD")


async def _commit_squash(git: Git, entry: MergeEntry, path: str, old: str, tip: str) -> None:
    author = await git.out(path, "log", "-1", "--no-merges", "--format=%an <%ae>", tip, "--")
    subjects = await git.out(path, "log", "--no-merges", "--reverse", "--format=- %s", f"{old}..{tip}", "--")
    await git.out(path, "commit", "--quiet", "--no-verify", f"--author={author}", "-m",
                  f"{entry.bead}: its branch as one commit", "-m",
                  f"{entry.branch} had {entry.base} merged into it (back from a conflict):\n{subjects}")


async def _gates(git: Git, config: MergeConfig, path: str) -> dict | None:
    commands = [("setup", argv) for argv in config.setup] + [("gate", argv) for argv in config.gates]
    failed = await run_all(commands, path, config.gate_timeout, git.pass_fds)  # they inherit the step lock
    if failed is None:
        return None
    return dict(state=MergeState.GATE_FAILED, detail=failed.detail, gate=failed.argv, output=failed.output)


async def _push(git: Git, entry: MergeEntry, config: MergeConfig, path: str,
                merged: MergeOutcome) -> MergeOutcome:
    """The base pushed to the remote, by configuration: `merged` as it is, or blocked with the push's reason."""
    if not config.push:
        return merged
    try:
        done = await git.run(path, "push", "--porcelain", config.remote,
                             f"refs/heads/{entry.base}:refs/heads/{entry.base}", timeout=config.push_timeout)
    except GitTimedOut:
        why, output = f"did not finish within {config.push_timeout:g}s", ""
    else:
        if not done.status:
            return merged
        why, output = f"failed: {done.tail(200)}", done.tail()
    return replace(merged, state=MergeState.BLOCKED, output=output,
                   detail=f"merged into {entry.base} locally; push to {config.remote} {why}: retry pushes again")


async def _move(git: Git, entry: MergeEntry, path: str, old: str, tip: str, new: str) -> MergeOutcome:
    """The bead's branch to `new`, then the base from `old` to `new`: each only from the value it was read at."""
    holder = await holder_of(git, entry.repo, entry.base)
    blocked = await _blocked(git, entry, holder)
    if blocked:
        return MergeOutcome(MergeState.BLOCKED, blocked, base_before=old)
    checkout = holder.path if holder is not None and not holder.missing else ""
    await write_journal(path, dict(bead=entry.bead, branch=entry.branch, base=entry.base, old=old, new=new,
                                   tip=tip, holder=checkout))
    kill_point("worktrees-before-refs")
    if not await _update_ref(git, entry.repo, entry.branch, new, tip, entry.bead):
        await clear_journal(path)
        return MergeOutcome(MergeState.QUEUED, f"{entry.branch} moved during the merge: queued again",
                            base_before=old)
    kill_point("worktrees-between-refs")
    try:
        moved = await (_fast_forward(git, entry, checkout, old, new) if checkout else
                       _update_ref(git, entry.repo, entry.base, new, old, entry.bead))
    finally:
        kill_point("worktrees-after-refs")
        await clear_journal(path)
    if not moved:
        return MergeOutcome(MergeState.QUEUED, f"{entry.base} moved during the merge: queued again",
                            base_before=old)
    return MergeOutcome(MergeState.MERGED, f"{entry.base} is at {new[:12]}", base_before=old, base_after=new)


async def _update_ref(git: Git, repo: str, branch: str, new: str, old: str, bead: str) -> bool:
    """Move `branch` from `old` to `new`; False if it was not at `old` (someone moved it)."""
    if new == old:
        return True
    done = await git.run(repo, "update-ref", "-m", f"anvilfs: merge bead {bead}", f"refs/heads/{branch}", new, old)
    if done.status and await resolve(git, repo, f"refs/heads/{branch}") == old:
        raise GitFailed(f"could not move {branch} in {repo}: {done.tail(200)}", detail=done.tail())
    return done.status == 0


async def _fast_forward(git: Git, entry: MergeEntry, checkout: str, old: str, new: str) -> bool:
    """REPO's checkout of the base fast-forwarded to `new` (files and branch): only from `old`."""
    if await resolve(git, entry.repo, f"refs/heads/{entry.base}") != old:
        return False
    done = await git.run(checkout, "merge", "--ff-only", "--no-stat", "--quiet", new)
    if done.status:  # an untracked file of the user's in the way, say: git touched nothing
        raise GitFailed(f"{checkout} could not be fast-forwarded to {new[:12]}: {done.tail(200)}",
                        detail=done.tail())
    return True
