"""Worktree sessions at work on beads: the rules that tie sessions, beads, mail and the workspaces together.

    new ... worktree   the worktree is made (git), then the session, with it as its cwd
    claim              by a worktree session: the bead's branch checked out in its worktree, then the claim
    complete           of a bead on a branch: what the agent left committed, then the completion
    a completion       (or an approval) of a bead on a branch queues it for merging
    ReworkNeeded       the merge queue could not merge it: the bead back to pending, a REWORK_REQUEST to its
                       worker
    SessionEnded       a removed session's worktree removed if it holds nothing, else kept

Each verb that needs git checks everything it can first, with nothing
changed; then git works in a task (workspaces.start), and the write is
answered once the verb is done and on disk, or with git's refusal. A
crash in between leaves git ahead of the records, and every step may
simply be asked again (the engine re-reads git); at start, `agree` queues
a completed bead whose entry a crash lost, and sends back one whose
conflict was recorded but not acted on.
"""

from __future__ import annotations

from dataclasses import dataclass

from .beads import Board, Status, Who
from .domain_events import BeadChanged, EventBus, ReworkNeeded, SessionEnded
from .errors import Busy, NameTaken
from .mail import Draft, MessageType, PostOffice
from .mail.message import Message
from .journal import timestamp
from .sessions import Sessions, State
from .waitable import collecting, on_disk
from .workspaces import Workspaces
from .worktrees.names import session_branch_syntax

NO_CHANGE = "no-change:"  # a result that starts so completes a bead whose branch has nothing of its own


@dataclass(frozen=True, slots=True)
class NewSession:
    backend: str
    repo: str
    name: str
    base: str | None
    options: dict


class Teamwork:
    def __init__(self, sessions: Sessions, board: Board, post: PostOffice, workspaces: Workspaces, bus: EventBus):
        self.sessions, self.board, self.post, self.ws = sessions, board, post, workspaces
        self._claiming: dict[str, str] = {}  # bead -> the worktree session whose claim makes its branch now
        bus.subscribe(BeadChanged, self._bead_changed)
        bus.subscribe(ReworkNeeded, self._rework)
        bus.subscribe(SessionEnded, self._session_ended)

    # ------------------------------------------------------------ new ... worktree

    def new_session(self, backend: str, repo: str, *, name: str, base: str | None, **options) -> str:
        """`new BACKEND REPO worktree`: checked now, made in a task; the write is answered once it exists."""
        self.ws.check_enabled()
        self.sessions.check_new(backend, repo, **options)
        name = name or self.sessions.next_name()
        self.sessions.check_name(name)
        session_branch_syntax(name)
        if name in self.ws.creating:
            raise NameTaken(f"choose another name: a session named {name!r} is being made")
        self.ws.creating.add(name)

        async def make() -> None:
            try:
                wt = await self.ws.create(name, repo, base)
                try:
                    with collecting() as saving:
                        self.sessions.new(backend, wt.path, name=name, worktree=wt.repo, **options)
                    await on_disk(saving, "the session").wait()
                except BaseException:
                    await self.ws.abandon(wt, f"session {name} was not made")
                    raise
                await self.ws.adopt(wt)
            finally:
                self.ws.creating.discard(name)
        self._start(make, lambda: self.ws.creating.discard(name))
        return name

    # ------------------------------------------------------------ claim and complete

    def claim(self, bead: str, who: Who, holder: str | None, lease: int | None) -> None:
        holder = holder or who.session
        wt = self.ws.of(holder) if holder else None
        if wt is None:
            self.board.claim(bead, who, holder, lease)
            return
        self.board.check_claim(bead, who, holder, lease)
        session = self.sessions.get(holder)
        if session.state is State.RUNNING and who.session != holder:
            raise Busy(f"claim: session {holder} is running a turn in its worktree; claim for it when the turn "
                       "ends (its agent may claim for itself)")
        unmerged = [d for d in self.board.get(bead).depends_on if self._unmerged(d)]
        if unmerged:
            raise Busy(f"claim: bead {bead} depends on {', '.join(unmerged)}, whose branch is not merged yet "
                       "(agent/merges/list): its work would be missing from the new branch")
        held = [b.id for b in self.board.all() if b.assigned_to == holder and b.status is Status.IN_PROGRESS]
        if held:
            raise Busy(f"claim: session {holder} works in a worktree and holds bead {held[0]}: complete or "
                       "unclaim it first (a worktree session holds one bead at a time)")
        if bead in self._claiming:
            raise Busy(f"claim: bead {bead} is being claimed by {self._claiming[bead]} now")
        self._claiming[bead] = holder

        async def switch_then_claim() -> None:
            try:
                await self.ws.claim(holder, bead)
                with collecting() as saving:
                    self.board.claim(bead, who, holder, lease)
                await on_disk(saving, "the claim").wait()
            finally:
                self._claiming.pop(bead, None)
        self._start(switch_then_claim, lambda: self._claiming.pop(bead, None))

    def complete(self, bead: str, result: str | None, by: str) -> None:
        held = self.board.check_complete(bead)
        branch = self.ws.bead(bead)
        if branch is None or branch.session != held.assigned_to or self.ws.of(held.assigned_to) is None:
            self.board.complete(bead, result, by=by)
            return
        no_change = result is not None and result.startswith(NO_CHANGE)
        if no_change and not result.removeprefix(NO_CHANGE).strip():
            raise Busy(f"complete: say why bead {bead} needs no change: `complete no-change: REASON`")

        async def commit_then_complete() -> None:
            await self.ws.complete(held.assigned_to, bead, held.title, no_change=no_change)
            with collecting() as saving:
                self.board.complete(bead, result, by=by)
            await on_disk(saving, "the completion").wait()
        self.ws.answer_after(commit_then_complete)

    def _start(self, work, undo) -> None:
        """Start `work`, which the write is answered after; if it cannot start, what was marked is undone."""
        try:
            self.ws.answer_after(work)
        except BaseException:
            undo()
            raise

    # ------------------------------------------------------------ reactions

    def _bead_changed(self, event: BeadChanged) -> None:
        """A bead on a branch completed (or approved): its branch joins the merge queue, in the same step.
        Released or unclaimed: its branch is freed from its worker's worktree, what was left committed."""
        if event.verb in ("unclaim", "release"):
            branch, bead = self.ws.bead(event.bead), self.board.find(event.bead)
            if branch is not None and bead is not None:
                self.ws.release(branch.session, event.bead, bead.title, event.verb)
            return
        if event.status != Status.COMPLETED.value or event.verb not in ("complete", "approve"):
            return
        self._queue_if_branch(event.bead)

    def _unmerged(self, bead_id: str) -> bool:
        """A completed bead whose branch the base does not have yet (queued, merging, or sent back)."""
        entry = self.ws.queue.find(bead_id)
        return entry is not None and entry.state not in ("merged", "dropped")

    def _queue_if_branch(self, bead_id: str) -> bool:
        branch, bead = self.ws.bead(bead_id), self.board.find(bead_id)
        if branch is None or bead is None or bead.assigned_to != branch.session:
            return False
        if bead.result and bead.result.startswith(NO_CHANGE):
            return False  # nothing to merge, said so
        self.ws.queue.queue(branch)
        return True

    def _rework(self, event: ReworkNeeded) -> None:
        bead = self.board.find(event.bead)
        if bead is None or bead.status is not Status.COMPLETED:
            return
        self.board.rework(event.bead, f"{event.state}: {event.detail}"[:300])
        self._mail_rework(event, bead.title)

    def _mail_rework(self, event: ReworkNeeded, title: str) -> None:
        to = event.session if self.sessions.find(event.session) is not None else "human"
        what = (f"these files conflict with what was merged meanwhile: {', '.join(event.files)}" if event.files
                else f"the gate `{' '.join(event.gate)}` failed" if event.gate else event.detail)
        body = (f"The merge queue could not merge bead {event.bead} ({title}), branch {event.branch}: {what}.\n"
                f"Nothing was merged; the bead is pending again and its branch is kept. Claim it again: the claim "
                f"checks the branch out and merges the base into it, leaving conflicting files with their markers "
                f"to resolve; then complete it.\n")
        if event.output:
            body += f"\nThe end of the output:\n{event.output[-2000:]}\n"
        draft = Draft(to=to, type=MessageType.REWORK_REQUEST, subject=f"rework bead {event.bead}: {event.state}"[:200],
                      body=body, bead=event.bead)
        self.post.deliver(Message.of(draft, id=self.post.ids.next(), sender="anvilfs", timestamp=timestamp()))

    def _session_ended(self, event: SessionEnded) -> None:
        if event.how == "removed":
            self.ws.session_removed(event.session)

    def agree(self) -> None:
        """At start: a completed bead on a branch with no entry is queued (a crash between the two); one whose
        entry says conflict or gate-failed but is still completed goes back to work."""
        for bead in self.board.all():
            entry = self.ws.queue.find(bead.id)
            if bead.status is Status.COMPLETED and entry is None:
                self._queue_if_branch(bead.id)
            elif bead.status is Status.COMPLETED and entry is not None and entry.state in ("conflict", "gate-failed"):
                self._rework(ReworkNeeded(bead.id, entry.session, entry.branch, entry.state, entry.detail))
