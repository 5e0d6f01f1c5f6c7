"""The merge queue: beads' branches brought into their bases one at a time, in the order they were queued.

An entry moves queued -> merging -> merged | conflict | gate-failed |
blocked (model.MergeState), each move saved before the next step. The step
itself is the engine's (worktrees/merge.py): a rebase onto the base's tip
in a worktree of its own, the configured gates, the move of the base. On a
conflict or a failing gate nothing changed in git, and a ReworkNeeded event
sends the bead back to its worker (the app's wiring: the bead to `pending`,
a REWORK_REQUEST mail). A `blocked` entry (REPO has local changes on the
base, a push failed, a killed step's git still runs) is tried again by
itself every `retry_blocked` seconds, or at once by `retry BEAD`.

After a crash, an entry found `merging` goes back to `queued` once the
start-up repair cleaned its merge worktree; the step first checks whether
the base already has the branch, so nothing is merged twice.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable

import trio

from ..domain_events import MergeMoved, ReworkNeeded
from ..errors import AnvilError, Busy, NotFound
from ..storage.database import Commit
from ..waitable import Changes
from ..worktrees import Git, MergeConfig, MergeEntry, MergeState, merge_path_for, merge_step, repair
from .records import DROPPED, BeadBranch, Entry, Records, is_waiting

log = logging.getLogger("anvilfs.workspaces")

_RETRYABLE = frozenset({MergeState.CONFLICT.value, MergeState.GATE_FAILED.value, MergeState.BLOCKED.value})
_DROPPABLE = _RETRYABLE | {MergeState.QUEUED.value}


class MergeQueue:
    """Every entry, and the task that works through them."""

    def __init__(self, records: Records, root: str, config: Callable[[str], MergeConfig],
                 publish: Callable[[object], None], git: Git, retry_blocked: float = 30.0):
        self.records, self.root, self.config, self.publish, self.git = records, root, config, publish, git
        self.retry_blocked = retry_blocked
        self._entries: dict[str, Entry] = {e.bead: e for e in records.entries()}
        self._seq = max((e.seq for e in self._entries.values()), default=0)
        self._wake = Changes()
        self.changes = Changes()  # bumps at every move: agent/merges/list's stamp
        self.after_step: Callable[[], Awaitable[None]] | None = None  # what else a step's end refreshes

    # ------------------------------------------------------------ reading

    def entries(self) -> list[Entry]:
        return sorted((e for e in self._entries.values() if e.state != DROPPED), key=lambda e: e.seq)

    def find(self, bead: str) -> Entry | None:
        return self._entries.get(bead)

    def text(self) -> str:
        return "".join(e.line() for e in self.entries())

    # ------------------------------------------------------------ the verbs

    def queue(self, branch: BeadBranch, why: str = "queued") -> None:
        """Put the bead's branch at the end of the queue (again, after a conflict or a drop)."""
        entry = self._entries.get(branch.bead)
        if entry is not None and entry.state == MergeState.MERGING.value:
            raise Busy(f"merge: bead {branch.bead}'s branch is being merged now; wait for it (agent/merges/list)")
        self._seq += 1
        self._save(Entry(branch.bead, self._seq, branch.branch, branch.repo, branch.base, branch.session,
                         MergeState.QUEUED.value, why))

    def retry(self, bead: str) -> None:
        entry = self._get(bead)
        if entry.state not in _RETRYABLE:
            raise Busy(f"retry: bead {bead}'s entry is {entry.state}; retry takes one that is "
                       f"{', '.join(sorted(_RETRYABLE))}")
        self._save(entry.moved(MergeState.QUEUED.value, "retried"))

    def drop(self, bead: str) -> None:
        entry = self._get(bead)
        if entry.state not in _DROPPABLE:
            raise Busy(f"drop: bead {bead}'s entry is {entry.state}; drop takes one that is "
                       f"{', '.join(sorted(_DROPPABLE))} (its branch is kept)")
        self._save(entry.moved(DROPPED, "dropped by hand; its branch is kept"))

    def _get(self, bead: str) -> Entry:
        entry = self._entries.get(bead)
        if entry is None or entry.state == DROPPED:
            raise NotFound(f"bead {bead!r} is not in the merge queue; agent/merges/list shows what is")
        return entry

    def _save(self, entry: Entry) -> None:
        """A move a client asked for: the request that moved it is answered once it is on disk."""
        self._move(entry)
        self._wake.bump()

    def _move(self, entry: Entry) -> Commit | None:
        """Every move of an entry: kept, queued for disk (its Commit returned), shown, reported in `events`."""
        self._entries[entry.bead] = entry
        commit = self.records.save_entry(entry)
        self.changes.bump()
        self.publish(MergeMoved(entry.bead, entry.state, entry.branch, entry.detail))
        return commit

    # ------------------------------------------------------------ the task

    async def run(self) -> None:
        """For ever: repair what a crash left, then merge the oldest queued entry, one at a time."""
        await self._recover()
        while True:
            version = self._wake.version
            entry = next((e for e in self.entries() if is_waiting(e)), None)
            if entry is not None:
                await self._step(entry)
                continue
            with trio.move_on_after(self.retry_blocked):
                await self._wake.wait_changed(version)
            self._retry_blocked()

    async def _recover(self) -> None:
        for repo in sorted({e.repo for e in self._entries.values()}):
            path = merge_path_for(self.root, repo)
            if not os.path.isdir(path):
                continue
            try:
                repaired = await repair(self.git, repo, path)
            except AnvilError as exc:
                log.warning("merge queue: repair of %s failed: %s", repo, exc.message)
                continue
            for what in (*repaired.aborted, *repaired.finished):
                self.publish(MergeMoved("-", "repaired", repo, what))
            for lock in repaired.stale_locks:
                self.publish(MergeMoved("-", "blocked", repo, f"{lock} is there: a git of yours running, or left "
                                                              "by one that died (remove it if none runs)"))
        for entry in list(self._entries.values()):
            if entry.state == MergeState.MERGING.value:  # the server died in its step: that step starts again
                await self._settle(entry.moved(MergeState.QUEUED.value, "again after a restart"))

    def _retry_blocked(self) -> None:
        for entry in self.entries():
            if entry.state == MergeState.BLOCKED.value:
                self._save(entry.moved(MergeState.QUEUED.value, f"tried again: {entry.detail}"[:200]))

    async def _step(self, entry: Entry) -> None:
        await self._settle(entry.moved(MergeState.MERGING.value))
        job = MergeEntry(entry.bead, entry.branch, entry.repo, entry.base)
        try:
            outcome = await merge_step(self.git, job, self.config(entry.repo), merge_path_for(self.root, entry.repo))
        except AnvilError as exc:  # the step lock never came (a killed step's gate still runs): a state, not a crash
            await self._settle(entry.moved(MergeState.BLOCKED.value, _one_line(exc.message)))
            return
        now = self._entries.get(entry.bead)
        if now is not None and now.seq != entry.seq:
            return  # queued again while it merged (cannot happen: queue refuses a merging entry); keep the newer
        rework = None
        if outcome.state in (MergeState.CONFLICT, MergeState.GATE_FAILED):  # in the same step as the entry's move:
            rework = ReworkNeeded(entry.bead, entry.session, entry.branch, outcome.state.value,  # no client sees
                                  _one_line(outcome.detail), outcome.files, outcome.gate, outcome.output)  # one alone
        await self._settle(entry.moved(outcome.state.value, _one_line(outcome.detail)), rework)
        if self.after_step is not None:
            await self.after_step()

    async def _settle(self, entry: Entry, also: object = None) -> None:
        """A move the queue makes by itself: saved, and on disk before the step goes on; `also`, an event
        published in the same step (what a client reads next sees both, or neither)."""
        commit = self._move(entry)
        if also is not None:
            self.publish(also)
        if commit is not None:
            await commit.wait()


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
