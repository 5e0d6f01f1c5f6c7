"""Worktree sessions' workspaces: the engine's calls, their records, and the merge queue, for one server.

A domain of its own: it knows sessions and beads by name only (the app
wires it to them through events and public methods). Git work is async
and a ctl write is handled synchronously, so a verb that needs git is
started as a task here (`start`), and the write's answer waits for its
Outcome (waitable.answer_after): the client sees the verb done, or the
error git's answer makes, never a half. One session's git work runs at a
time (a lock per session), so a claim and a complete of one worktree
never interleave.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Awaitable, Callable

import trio

from ..domain_events import WorktreeChanged
from ..errors import AnvilError, InvalidRequest, NotFound
from ..waitable import Changes, Outcome, answer_after
from ..worktrees import (Claimed, Completed, Git, MergeConfig, SessionWorktree, claim, complete, create,
                         list_worktrees, prune, remove_if_merged, setup)
from ..worktrees.names import bead_branch
from ..worktrees.session import current_branch, work_of
from .queue import MergeQueue
from .records import BeadBranch, Records

log = logging.getLogger("anvilfs.workspaces")
DETACHED = "(detached)"


class Workspaces:
    def __init__(self, records: Records, root: str, config: Callable[[str], MergeConfig],
                 publish: Callable[[object], None], git: Git = Git(), retry_blocked: float = 30.0):
        self.records, self.root, self.config, self.publish, self.git = records, root, config, publish, git
        self.enabled = records.db is not None
        self.queue = MergeQueue(records, root, config, publish, git, retry_blocked)
        self.queue.after_step = self.refresh  # a merge moves branches: agent/worktrees shows it
        self._live: dict[str, SessionWorktree] = {}  # by session
        self._kept: dict[str, SessionWorktree] = {}  # by path: worktrees of removed sessions
        for wt, live in records.worktrees():
            (self._live.__setitem__(wt.session, wt) if live else self._kept.__setitem__(wt.path, wt))
        self._beads: dict[str, BeadBranch] = {b.bead: b for b in records.bead_branches()}
        self._current: dict[str, str] = {}  # session -> the branch its worktree has checked out
        self._locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)
        self.creating: set[str] = set()  # session names whose worktree is being made
        self.listing = ""  # agent/worktrees, refreshed after every change anvilfs makes
        self.changes = Changes()  # bumps when a session's branch or the listing changes
        self._nursery: trio.Nursery | None = None

    # ------------------------------------------------------------ reading

    def of(self, session: str) -> SessionWorktree | None:
        return self._live.get(session)

    def branch_of(self, session: str) -> str:
        return self._current.get(session, "") if session in self._live else ""

    def bead(self, bead: str) -> BeadBranch | None:
        return self._beads.get(bead)

    # ------------------------------------------------------------ the task behind a ctl write

    async def run(self, cwd_of: Callable[[], dict[str, str]], *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """`cwd_of()`: every session's name and cwd, to tell which records a crash left behind."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            sessions = cwd_of()
            for wt in list(self._kept.values()):  # made, and its session too, but killed before the row said so
                if sessions.get(wt.session) == wt.path and wt.session not in self._live:
                    await self.adopt(wt)
            for session in [s for s in self._live if s not in sessions]:  # removed while it was down
                await self._forget(session)
            for session, wt in list(self._live.items()):
                self._current[session] = await self._branch_now(wt)
            await self.refresh()
            nursery.start_soon(self._run_queue)

    async def _run_queue(self) -> None:
        while True:
            try:
                await self.queue.run()
            except OSError as exc:  # the disk refused a move: say so, and try again later
                self.publish(WorktreeChanged("merges", f"queue stopped: its state could not be saved ({exc}); "
                                                       f"trying again in {self.queue.retry_blocked:.0f} s"))
                await trio.sleep(self.queue.retry_blocked)

    def start(self, work: Callable[[], Awaitable[None]]) -> Outcome:
        """Run `work` as a task; the Outcome the write that asked for it is answered after."""
        if self._nursery is None:
            raise InvalidRequest("the server is still starting: write it again in a moment")
        outcome = Outcome()

        async def task() -> None:
            try:
                await work()
            except AnvilError as exc:
                outcome.finish(exc)
            except OSError as exc:  # a record the disk refused
                outcome.finish(AnvilError(f"not saved: the disk refused it ({exc.strerror or exc}); see events"))
            except Exception as exc:  # a bug must not take the server down, nor leave the write unanswered
                log.exception("worktree work failed")
                outcome.finish(AnvilError(f"internal error: {type(exc).__name__}: {exc}"))
            else:
                outcome.finish()
        self._nursery.start_soon(task)
        return outcome

    def answer_after(self, work: Callable[[], Awaitable[None]]) -> None:
        """Start `work`; the request being handled is answered once it is done (or with its error)."""
        answer_after(self.start(work))

    def check_enabled(self) -> None:
        if not self.enabled:
            raise InvalidRequest("worktree: this server keeps no state directory (serve --state DIR), and a "
                                 "worktree's records must survive it")

    # ------------------------------------------------------------ sessions

    async def create(self, session: str, repo: str, base: str | None) -> SessionWorktree:
        async with self._locks[session]:
            wt = await create(self.git, repo, self.root, session, base)
            await _on_disk(self.records.save_worktree(wt, live=False))  # listed (and kept) from now on
            failed = await setup(wt.path, self.config(wt.repo))
            if failed is not None:
                await self.refresh()
                raise AnvilError(f"worktree: the setup of {wt.repo} failed in {wt.path}: {failed.detail}; "
                                 "the worktree is kept (agent/worktrees)", detail=failed.output)
            return wt

    async def adopt(self, wt: SessionWorktree) -> None:
        """The session of `wt` exists now: its worktree is live."""
        await _on_disk(self.records.save_worktree(wt, live=True))
        self._kept.pop(wt.path, None)
        self._live[wt.session] = wt
        self._current[wt.session] = wt.branch
        self.publish(WorktreeChanged(wt.session, f"made {wt.path} on {wt.branch} from {wt.base} of {wt.repo}"))
        await self.refresh()

    async def abandon(self, wt: SessionWorktree, why: str) -> None:
        """A worktree made for a session that never came to be: removed if it holds nothing, else kept."""
        kept = await remove_if_merged(self.git, wt.repo, wt.path, wt.base)
        self.publish(WorktreeChanged(wt.session, f"{wt.path} {'kept: ' + kept if kept else 'removed'} ({why})"))
        await self.refresh()

    def session_removed(self, session: str) -> None:
        if session in self._live and self._nursery is not None:
            self._nursery.start_soon(self._forget, session)

    async def _forget(self, session: str) -> None:
        async with self._locks[session]:
            wt = self._live.pop(session, None)
            if wt is None:
                return
            self._current.pop(session, None)
            self._kept[wt.path] = wt
            await _on_disk(self.records.save_worktree(wt, live=False))
            try:
                kept = await remove_if_merged(self.git, wt.repo, wt.path, wt.base)
            except AnvilError as exc:
                kept = exc.message
            if not kept:
                self._kept.pop(wt.path, None)
            self.publish(WorktreeChanged(session, f"{wt.path} kept: {kept}" if kept else f"{wt.path} removed: "
                                                  "everything in it is in its base"))
        await self.refresh()

    # ------------------------------------------------------------ beads

    async def claim(self, session: str, bead: str) -> Claimed:
        wt = self._need(session)
        async with self._locks[session]:
            claimed = await claim(self.git, wt, bead)
            await _on_disk(self.records.save_bead_branch(BeadBranch(bead, claimed.branch, wt.repo, wt.base, session)))
            self._beads[bead] = BeadBranch(bead, claimed.branch, wt.repo, wt.base, session)
            self._current[session] = claimed.branch
            self.changes.bump()
            how = "resumed" if claimed.resumed else "made from " + wt.base
            marks = f"; conflicts to resolve: {', '.join(claimed.conflicts)}" if claimed.conflicts else ""
            self.publish(WorktreeChanged(session, f"on {claimed.branch} for bead {bead} ({how}){marks}"))
        await self.refresh()
        return claimed

    async def complete(self, session: str, bead: str, title: str, *, no_change: bool) -> Completed:
        """Commit what the agent left and free the branch; refused when nothing was done but `no_change`."""
        wt = self._need(session)
        async with self._locks[session]:
            own, dirty = await work_of(self.git, wt, bead)
            if not own and not dirty and not no_change:
                raise InvalidRequest(  # what to do first: 9P2000 keeps 128 bytes of it
                    f"complete: write `complete no-change: REASON` if bead {bead} needs no change: its branch "
                    f"{bead_branch(bead)} has no commit of its own and {wt.path} no change")
            done = await complete(self.git, wt, bead, title)
            self._current[session] = DETACHED
        await self.refresh()
        return done

    def release(self, session: str, bead: str, title: str, why: str) -> None:
        """The bead went back to pending while its branch was checked out in `session`'s worktree (unclaim,
        its session stopped or removed, a lease ran out): what is left there is committed on the branch and
        the worktree detached, so that the next claim (any session's) resumes the branch with all of it.
        Nothing is discarded: a merge with unresolved conflicts is left as it is, and `events` says so."""
        if self._nursery is not None:  # before the start (a lease that ran out meanwhile): the next claim resumes
            answer_after(self.start(lambda: self._release(session, bead, title, why)))

    async def _release(self, session: str, bead: str, title: str, why: str) -> None:
        async with self._locks[session]:
            wt = self._live.get(session) or next((w for w in self._kept.values() if w.session == session), None)
            if wt is None or not os.path.isdir(wt.path):
                return
            try:
                if await current_branch(self.git, wt.path) != bead_branch(bead):
                    return
                done = await complete(self.git, wt, bead, f"{title} (left when {why})")
            except AnvilError as exc:
                self.publish(WorktreeChanged(session, f"bead {bead}'s branch stays checked out in {wt.path}: "
                                                      f"{exc.message}"))
                return
            if session in self._live:
                self._current[session] = DETACHED
            kept = "committed what was left and " if done.committed else ""
            self.publish(WorktreeChanged(session, f"{kept}freed {done.branch} of bead {bead} ({why})"))
        await self.refresh()

    def _need(self, session: str) -> SessionWorktree:
        wt = self._live.get(session)
        if wt is None:
            raise NotFound(f"session {session!r} has no worktree")
        return wt

    # ------------------------------------------------------------ agent/worktrees

    async def refresh(self) -> None:
        """agent/worktrees again, from git: every worktree under the state's worktrees/ of every repository."""
        live = set(self._live)
        lines = []
        for repo, mine in self._by_repo():
            try:
                infos = await list_worktrees(self.git, repo, self.root, mine, live, mine[0].base)
            except AnvilError as exc:
                lines.append(f"- {repo}: cannot be listed: {exc.message}\n")
                continue
            lines += [info.line() + (f" {info.detail}" if info.detail else "") + "\n" for info in infos]
        self.listing = "".join(sorted(set(lines)))
        self.changes.bump()

    async def prune(self) -> None:
        for repo, mine in self._by_repo():
            removed, deleted = await prune(self.git, repo, self.root, mine, set(self._live), mine[0].base)
            for path in removed:
                self._kept.pop(path, None)
            if removed or deleted:
                self.publish(WorktreeChanged("worktrees", f"pruned in {repo}: {len(removed)} worktrees "
                                             f"({', '.join(map(os.path.basename, removed)) or '-'}), "
                                             f"{len(deleted)} branches ({', '.join(deleted) or '-'})"))
        await self.refresh()

    def _by_repo(self) -> list[tuple[str, list[SessionWorktree]]]:
        """Every worktree record, live and kept, by repository (in the repositories' order)."""
        records = [*self._live.values(), *self._kept.values()]
        return [(repo, [r for r in records if r.repo == repo]) for repo in sorted({r.repo for r in records})]

    async def _branch_now(self, wt: SessionWorktree) -> str:
        try:
            return await current_branch(self.git, wt.path) or DETACHED
        except AnvilError:
            return ""


async def _on_disk(commit) -> None:
    if commit is not None:
        await commit.wait()
