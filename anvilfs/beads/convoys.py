"""Convoys: groups of beads with a goal, shared context and a coordinator (SPEC §6).

Membership lives in one place, each bead's `convoy` field, so a convoy's
bead list can never disagree with its beads. A convoy hears of its beads
through the event bus and completes itself in the same step as the bead
whose completion (or removal) leaves none open (before that bead's write is
answered), never while it has none, and never at add_bead: a convoy given
beads completed already waits for an open one, or for `complete`.

    planning ──first bead claimed──> in_progress ──all beads completed──> completed
        └──────────── abandon ────────────┴─> abandoned
    `complete` when every bead is done: completed, or failed if one failed.
    A bead reopened in a completed convoy takes it back to in_progress.
"""

from __future__ import annotations

import time
from bisect import bisect_left

from ..domain_events import BeadChanged, ConvoyChanged, EventBus, SessionRenamed
from ..errors import AnvilError, Busy, InvalidRequest, NotFound
from ..journal import timestamp
from ..storage import TomlObjects
from ..waitable import Settles, answer_after, collecting
from .board import Board
from .checks import check_label, check_text, check_title
from .collection import Collection
from .model import Convoy, ConvoyStatus as CS, convoy_from_toml
from .states import Status
from .view import Replaced

_CLOSED = (CS.COMPLETED, CS.FAILED, CS.ABANDONED)
_COMPLETING = ("complete", "approve")  # the verbs of a bead's board.py that may leave it completed


class Convoys:
    def __init__(self, files: TomlObjects | None, bus: EventBus, board: Board):
        self.bus = bus
        self.board = board
        self._store = Collection("convoy", files, convoy_from_toml, listing="convoys/list", undone=self._undone)
        self._convoys = self._store.items  # the same dict: reads here, changes through the store
        self._members = _Members(board)
        self.version = 0  # counts changes of convoys (not of their beads: the board counts those), for files' stamps
        self.changed_at = int(time.time())  # and the epoch second of the last
        board.convoy_check = self._check_open
        bus.subscribe(BeadChanged, self._bead_changed)
        bus.subscribe(SessionRenamed, self._session_renamed)

    def load(self) -> list[str]:
        return self._store.load()

    # ------------------------------------------------------------ reading

    @property
    def broken(self) -> dict[str, str]:
        return self._store.broken

    def get(self, convoy_id: str) -> Convoy:
        return self._store.get(convoy_id)

    def find(self, convoy_id: str) -> Convoy | None:
        return self._convoys.get(convoy_id)

    def all(self) -> list[Convoy]:
        return list(self._convoys.values())

    def beads_of(self, convoy_id: str) -> list:
        beads = self.board.by_id()
        return [beads[i] for i in self._members.of(convoy_id)]

    def progress(self, convoy_id: str) -> str:
        return "{}/{} completed".format(*self._members.counts(convoy_id))

    def tallies(self) -> tuple[dict[str, int], dict[str, list[str]]]:
        """Every convoy's count of completed beads and its beads, as of now (one look for 1,000 convoys, where
        progress() looks once each): dicts to read, not to keep, that the next change of the board changes."""
        return self._members.tallies()

    def _check_open(self, convoy_id: str) -> None:
        """A bead may join: the convoy exists and is not closed."""
        convoy = self.get(convoy_id)
        if convoy.status in _CLOSED:
            raise Busy(f"convoy {convoy_id} is {convoy.status}: it takes no more beads")

    # ------------------------------------------------------------ changing

    def new(self, title: str, goal: str) -> Convoy:
        check_title(title)
        check_text("goal", goal)
        now = timestamp()
        convoy = Convoy(id=self._store.new_id(title), title=title, goal=goal,
                        created=now, updated=now)
        return self._save(convoy, f"Convoy created: {title} ({convoy.id})", "new", new=True)

    def add_bead(self, convoy_id: str, bead_id: str) -> None:
        self._check_open(convoy_id)
        bead = self.board.get(bead_id)
        if bead.convoy == convoy_id:
            raise InvalidRequest(f"add_bead: bead {bead_id} is in convoy {convoy_id} already")
        if bead.convoy:
            raise Busy(f"add_bead: bead {bead_id} is in convoy {bead.convoy}; write 'remove_bead {bead_id}' to that convoy's ctl first")
        self.board.set_convoy(bead_id, convoy_id)  # its event brings this convoy up to date

    def remove_bead(self, convoy_id: str, bead_id: str) -> None:
        convoy = self.get(convoy_id)
        if convoy.status in _CLOSED:
            raise Busy(f"remove_bead: convoy {convoy_id} is {convoy.status}: its beads stay as they were")
        bead = self.board.get(bead_id)
        if bead.convoy != convoy_id:
            raise NotFound(f"remove_bead: bead {bead_id} is not in convoy {convoy_id}; `convoys/{convoy_id}/beads` lists its beads")
        self.board.set_convoy(bead_id, "")
        self._check_completion(self._convoys[convoy_id], bead_id)  # the bead it lost may have been the last open one

    def _session_renamed(self, event: SessionRenamed) -> None:
        """A convoy's coordinator follows its session to its new name (restore renames one whose name is
        reserved now)."""
        for convoy in [c for c in self._convoys.values() if c.coordinator == event.old]:
            try:
                self._save(convoy.copy(coordinator=event.new), f"Convoy {convoy.id}: coordinator {event.new}, "
                           f"formerly {event.old}", "coordinator", event.new)
            except AnvilError as exc:  # not a client's request: report it, keep the others going
                if self.bus.journal is not None:
                    self.bus.journal.append(f"- convoys: cannot make {event.new} coordinator of {convoy.id}: "
                                            f"{exc.message}")

    def set_coordinator(self, convoy_id: str, session: str) -> Convoy:
        convoy = self.get(convoy_id)
        check_label("coordinator", session)
        return self._save(convoy.copy(coordinator=session), f"Convoy {convoy_id}: coordinator {session}", "coordinator", session)

    def set_context(self, convoy_id: str, text: str) -> Convoy:
        convoy = self.get(convoy_id)
        check_text("context", text)
        return self._save(convoy.copy(context=text), f"Convoy {convoy_id}: context updated", "context")

    def complete(self, convoy_id: str) -> Convoy:
        convoy = self.get(convoy_id)
        if convoy.status in _CLOSED:
            raise Busy(f"complete: convoy {convoy_id} is {convoy.status} already")
        beads = self.beads_of(convoy_id)
        if not beads:
            raise Busy(f"complete: convoy {convoy_id} has no beads; add_bead first, or abandon it")
        open_beads = [b.id for b in beads if b.status not in (Status.COMPLETED, Status.FAILED)]
        if open_beads:
            raise Busy(f"complete: convoy {convoy_id} has beads still open: {', '.join(open_beads)}")
        failed = [b.id for b in beads if b.status is Status.FAILED]
        status = CS.FAILED if failed else CS.COMPLETED
        why = f"failed beads: {', '.join(failed)}" if failed else self.progress(convoy_id)
        return self._save(convoy.copy(status=status), f"Convoy {status}: {convoy.title} ({convoy_id}), {why}", "complete", why)

    def abandon(self, convoy_id: str) -> Convoy:
        convoy = self.get(convoy_id)
        if convoy.status in _CLOSED:
            raise Busy(f"abandon: convoy {convoy_id} is {convoy.status} already")
        return self._save(convoy.copy(status=CS.ABANDONED), f"Convoy abandoned: {convoy.title} ({convoy_id})", "abandon")

    # ------------------------------------------------------------ reactions

    def _bead_changed(self, event: BeadChanged) -> None:
        convoy = self._convoys.get(event.convoy)
        if convoy is not None and event.verb != "convoy":  # joining (add_bead) neither starts nor completes it
            self._follow_beads(convoy, event.bead, claimed=event.verb == "claim",
                               completed=event.verb in _COMPLETING and event.status == Status.COMPLETED.value)

    def _follow_beads(self, convoy: Convoy, because: str, *, claimed: bool = True, completed: bool = True) -> None:
        """The convoy's status as its beads make it: started once one is claimed in it, completed when the
        completion of one leaves none open, and back in progress when one of a completed convoy's beads is not
        completed any more. `because` is the bead that changed; "" at start, which looks at them all."""
        beads = self.beads_of(convoy.id)
        taken = [b for b in beads if b.status is not Status.PENDING] if claimed else []
        if convoy.status == CS.PLANNING and taken:
            self._react(convoy.copy(status=CS.IN_PROGRESS), f"Convoy started: {convoy.id} (bead {because or taken[0].id} "
                        "taken)", "start", because or taken[0].id)
            convoy = self._convoys[convoy.id]
        if convoy.status in CS.OPEN and completed:
            self._check_completion(convoy, because)
        elif convoy.status == CS.COMPLETED and (open_bead := next((b for b in beads if b.status is not Status.COMPLETED), None)):
            self._react(convoy.copy(status=CS.IN_PROGRESS), f"Convoy reopened: {convoy.id} (bead {open_bead.id} "
                        f"{open_bead.status.value})", "reopen", open_bead.id)

    def _check_completion(self, convoy: Convoy, because: str) -> None:
        """A convoy whose beads are all completed (and that has some) completes itself, now."""
        beads = self.beads_of(convoy.id)
        if convoy.status in CS.OPEN and beads and all(b.status is Status.COMPLETED for b in beads):
            self._react(convoy.copy(status=CS.COMPLETED), f"Convoy completed: {convoy.title} ({convoy.id}), all "
                        f"{len(beads)} beads done", "complete", self.progress(convoy.id))

    def recheck(self) -> None:
        """At start: bring each convoy to what its beads say, where a convoy write that failed (or a crash) left it.

        Not a convoy still planning whose beads are all pending or completed: none of them was taken in it,
        so its completed ones were given to it completed (add_bead), which starts and completes nothing."""
        for convoy in list(self._convoys.values()):
            beads = self.beads_of(convoy.id)
            if convoy.status == CS.PLANNING and all(b.status in (Status.PENDING, Status.COMPLETED) for b in beads):
                continue
            self._follow_beads(convoy, "")

    def _react(self, convoy: Convoy, message: str, verb: str, detail: str) -> None:
        """A convoy following its beads. Its bead's change stands whatever happens here, so a refused
        write is reported (events, errors), not raised into the bead's writer; the next start re-checks."""
        with collecting() as queued:
            try:
                self._save(convoy, message, verb, detail)
            except AnvilError as exc:
                self._undone(convoy.id, exc.message)
        for commit in queued:  # the bead's request waits for the convoy's write too, but does not fail by it
            answer_after(_Unfailing(commit))

    def _undone(self, convoy_id: str, why: str, was: Convoy | None = None, now: Convoy | None = None) -> None:
        self.version += 1
        self.changed_at = int(time.time())
        if self.bus.journal is not None:
            self.bus.journal.append(f"- convoys: {why}; convoy {convoy_id} is re-checked at the next start "
                                     "(until then it is as its file says)")

    def _save(self, convoy: Convoy, message: str, verb: str, detail: str = "", *, new: bool = False) -> Convoy:
        self._store.save(convoy, message, new=new)
        self.version += 1
        self.changed_at = int(time.time())
        self.bus.publish(ConvoyChanged(convoy.id, verb, convoy.status, detail))
        return convoy


class _Members:
    """Each convoy's beads (their ids, in the board's order), kept a change of the board at a time: every bead's
    change asks for its convoy's (_bead_changed), and sorting 10,000 beads by convoy again each time held the
    loop for 5-10 ms; `convoys/list` asks for every convoy's (issue 32)."""

    def __init__(self, board: Board):
        self._board = board
        self._replaced = Replaced(board.by_id(), board.replacements)
        self._looked: object = None
        self._place: dict[str, int] = {}  # bead -> its place in the board's order
        self._members: dict[str, list[str]] = {}  # convoy -> its beads, by place
        self._done: dict[str, int] = {}  # convoy -> how many of them are completed

    def of(self, convoy_id: str) -> list[str]:
        self._look_if_changed()
        return self._members.get(convoy_id, [])

    def counts(self, convoy_id: str) -> tuple[int, int]:
        """How many of its beads are completed, and how many it has."""
        members = self.of(convoy_id)
        return self._done.get(convoy_id, 0), len(members)

    def tallies(self) -> tuple[dict[str, int], dict[str, list[str]]]:
        self._look_if_changed()
        return self._done, self._members

    def _look_if_changed(self) -> None:
        now = (self._board.changes.version, len(self._board.by_id()))
        if now != self._looked:
            self._looked = now
            self._look()

    def _look(self) -> None:
        changed = self._replaced.look()
        if changed is None:
            self._place, self._members, self._done = {}, {}, {}
            changed = [(None, bead) for bead in self._board.by_id().values()]
        for old, new in changed:
            if old is None:
                self._place[new.id] = len(self._place)
            elif old.convoy:
                self._done[old.convoy] -= old.status is Status.COMPLETED
                if old.convoy != new.convoy:
                    self._members[old.convoy].remove(new.id)
            if new.convoy:
                self._done[new.convoy] = self._done.get(new.convoy, 0) + (new.status is Status.COMPLETED)
                if old is None or old.convoy != new.convoy:
                    self._join(new.id, new.convoy)

    def _join(self, bead_id: str, convoy_id: str) -> None:
        place = self._place[bead_id]
        members = self._members.setdefault(convoy_id, [])
        if members and self._place[members[-1]] > place:  # back in a convoy it left: at its place
            members.insert(bisect_left([self._place[i] for i in members], place), bead_id)
        else:
            members.append(bead_id)


class _Unfailing:
    """A convoy's write that a bead's request waits for without failing by it (its refusal is reported)."""

    __slots__ = ("_commit",)

    def __init__(self, commit: Settles):
        self._commit = commit

    async def wait(self) -> None:
        try:
            await self._commit.wait()
        except OSError:
            pass
