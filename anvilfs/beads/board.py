"""The beads of one server: creating, claiming, completing, approving (SPEC §6; no 9P here).

Every verb is synchronous from its checks to its write, and the server runs
one at a time, so a claim is a compare-and-swap: of any number of
concurrent claimers exactly one finds the bead pending. A change is in
memory when the verb returns, and on disk (atomic, fsynced) with its message
for the git history before the request that made it is answered; a write the
disk refuses is taken back in memory (collection.py). Other domains hear of
changes through the event bus.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import trio

from ..domain_events import BeadChanged, EventBus, SessionEnded, SessionRenamed
from ..errors import AnvilError, Busy, InvalidRequest, NotFound, NotPermitted
from ..journal import timestamp
from ..storage import TomlObjects
from ..waitable import Changes
from . import owns as owns_rules
from .collection import Collection
from .checks import check_label, check_reason, check_text, check_title, find_cycles
from .model import Bead, bead_from_toml
from .states import HELD, Status, Verb, advance
from .view import BoardView, Replacements

MAX_LEASE = 7 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Who:
    """Who asked: the 9P uname, and the session it names, if it names one. An answer written to another
    participant's mail (human/mail) speaks as that participant (`name`, recorded), written by `uname`."""

    name: str
    session: str | None = None
    uname: str = ""

    def names(self) -> set[str]:
        return {n for n in (self.name, self.session, self.uname) if n}


class Board:
    """All beads; a convoy's rules live in convoys.py and hear of beads through events."""

    def __init__(
        self,
        files: TomlObjects | None,
        bus: EventBus,
        *,
        is_session: Callable[[str], bool],
        clock: Callable[[], float] = time.time,
    ):
        self.bus = bus
        self.is_session = is_session
        self.clock = clock
        self.convoy_check: Callable[[str], None] = _no_convoys  # Convoys sets it: raises if a bead cannot join
        self._store = Collection("bead", files, bead_from_toml, listing="beads/list", undone=self._undone)
        self._beads = self._store.items  # the same dict: reads here, changes through the store
        self.changes = Changes()  # bumps on every change (the lease task waits on it, the files' stamps follow it)
        self.changed_at = int(time.time())  # the epoch second of the last change: the mtime of files drawn from all beads
        # `list`, `ready` and `graph` as texts, kept a change at a time (view.py)
        self.replacements: Replacements[Bead] = Replacements()  # each change's (old bead, new), for what follows them
        self.view = BoardView(self._beads, lambda: self._store.broken, lambda: self.changes.version, self.replacements)
        # the beads held under a lease, all expire_leases looks at: it runs at every change of the board
        # (run_leases), and a look through 10,000 beads each time held the loop for 5-20 ms (issue 32)
        self._leased: set[str] = set()
        bus.subscribe(SessionEnded, self._session_ended)
        bus.subscribe(SessionRenamed, self._session_renamed)

    # ------------------------------------------------------------ loading

    def load(self) -> list[str]:
        """Read every bead file; returns a line for each problem found (reported, never fixed silently)."""
        problems = self._store.load()
        self._leased = {b.id for b in self._beads.values() if _leased(b)}
        problems += self._dependency_problems()
        self.view.look()  # drawn whole once now, before any client waits for it
        return problems

    def _dependency_problems(self) -> list[str]:
        problems = []
        for bead in self._beads.values():
            for dep in bead.depends_on:
                if dep not in self._beads:
                    problems.append(f"bead {bead.id} depends on {dep}, which does not exist: it can never be ready")
        for cycle in find_cycles(self._beads):
            problems.append(f"dependency cycle: {' -> '.join(cycle)}: none of these beads can ever be ready")
        return problems

    # ------------------------------------------------------------ reading

    @property
    def broken(self) -> dict[str, str]:
        return self._store.broken

    def get(self, bead_id: str) -> Bead:
        return self._store.get(bead_id)

    def find(self, bead_id: str) -> Bead | None:
        return self._beads.get(bead_id)

    def all(self) -> list[Bead]:
        return list(self._beads.values())

    def by_id(self) -> dict[str, Bead]:
        """The board's own dict of beads, in the order they were made: to read, never to change."""
        return self._beads

    def is_ready(self, bead: Bead) -> bool:
        """Claimable now: pending, and every dependency completed. `list` and `ready` both ask this."""
        return bead.status is Status.PENDING and all(
            (dep := self._beads.get(d)) is not None and dep.status is Status.COMPLETED for d in bead.depends_on)

    def ready(self, role: str | None = None) -> list[Bead]:
        return [b for b in self._beads.values() if self.is_ready(b) and (role is None or b.role == role)]

    def roles(self) -> list[str]:
        return self.view.roles()

    # ------------------------------------------------------------ changing

    def new(self, title: str, role: str, description: str, depends_on: Iterable[str] = (), *,
            requires_approval: bool = False, owns: Iterable[str] = (), convoy: str = "") -> Bead:
        check_title(title)
        check_label("role", role)
        check_text("description", description)
        deps = list(dict.fromkeys(depends_on))
        for dep in deps:
            if dep not in self._beads:
                raise NotFound(f"new: dependency {dep!r} is not a bead; `beads/list` shows the beads there are")
        owns = list(dict.fromkeys(owns))
        for entry in owns:
            if (why := owns_rules.check_entry(entry)) is not None:
                raise InvalidRequest(f"new: {why}")
        if convoy:
            self.convoy_check(convoy)
        now = timestamp()
        bead = Bead(id=self._store.new_id(title), title=title, role=role, description=description,
                    depends_on=deps, requires_approval=requires_approval, owns=owns, convoy=convoy,
                    created=now, updated=now)
        self._save(bead, f"Created: {title} ({bead.id}, role {role})", "new", new=True)
        return bead

    def claim(self, bead_id: str, who: Who, holder: str | None = None, lease: int | None = None) -> Bead:
        changed, message, verb, holder = self.check_claim(bead_id, who, holder, lease)
        return self._save(changed, message, verb, holder)

    def check_claim(self, bead_id: str, who: Who, holder: str | None = None,
                    lease: int | None = None) -> tuple[Bead, str, str, str]:
        """What `claim` would save (the bead, its message, verb and holder), with nothing changed; refused as
        `claim` would be. A worktree session's claim checks first, then makes the branch, then claims."""
        bead = self.get(bead_id)
        holder = holder or who.session
        if not holder:
            raise InvalidRequest(f"claim: you ({who.name}) are not a session: name who claims, "
                                 f"`claim NAME` (a session) or `claim NAME lease=SECONDS`")
        check_label("claim: holder", holder)
        if lease is not None and not 0 < lease <= MAX_LEASE:
            raise InvalidRequest(f"claim: lease={lease}: give 1 to {MAX_LEASE} seconds")
        if lease is None and not self.is_session(holder):
            raise NotFound(f"claim: {holder!r} is not a session; a claim for another name needs lease=SECONDS")
        if bead.status in HELD:
            if bead.assigned_to == holder and lease is not None and bead.status is Status.IN_PROGRESS:
                return (bead.copy(lease_until=self.clock() + lease), f"Lease renewed: {bead_id} by {holder}",
                        "renew", holder)
            raise Busy(f"claim: bead {bead_id} is already claimed by {bead.assigned_to} ({bead.status.value})")
        status = advance(bead_id, bead.status, Verb.CLAIM)
        waiting = [d for d in bead.depends_on if (dep := self._beads.get(d)) is None or dep.status is not Status.COMPLETED]
        if waiting:
            raise Busy(f"claim: bead {bead_id} waits for {', '.join(waiting)} to be completed")
        if bead.owns and (other := self._owns_conflict(bead)) is not None:
            mine, theirs, other_bead = other
            raise Busy(f"claim: bead {bead_id} owns {mine}, which overlaps {theirs} owned by {other_bead.id} "
                       f"(in progress, claimed by {other_bead.assigned_to}); claim it when that one is done")
        changed = bead.copy(status=status, assigned_to=holder, lease_until=self.clock() + lease if lease else 0.0,
                            held_by_session=self.is_session(holder))
        return changed, f"Claimed: {bead_id} by {holder}", "claim", holder

    def _owns_conflict(self, bead: Bead):
        for other in self._beads.values():
            if other.id != bead.id and other.status is Status.IN_PROGRESS and other.owns:
                if (pair := owns_rules.first_overlap(bead.owns, other.owns)) is not None:
                    return pair[0], pair[1], other
        return None

    def unclaim(self, bead_id: str) -> Bead:
        bead = self.get(bead_id)
        status = advance(bead_id, bead.status, Verb.UNCLAIM)
        return self._save(bead.copy(status=status, assigned_to="", lease_until=0.0, held_by_session=False),
                          f"Unclaimed: {bead_id} (was {bead.assigned_to})", "unclaim", bead.assigned_to)

    def check_complete(self, bead_id: str) -> Bead:
        """The bead, if `complete` can take it now (nothing changed)."""
        bead = self.get(bead_id)
        advance(bead_id, bead.status, Verb.SUBMIT if bead.requires_approval else Verb.COMPLETE)
        return bead

    def complete(self, bead_id: str, result: str | None = None, *, by: str = "") -> Bead:
        bead = self.check_complete(bead_id)
        verb = Verb.SUBMIT if bead.requires_approval else Verb.COMPLETE
        status = advance(bead_id, bead.status, verb)
        changes = {"status": status, "lease_until": 0.0}
        if result is not None:
            check_text("result", result)
            changes["result"] = result
        word = "Submitted for approval" if bead.requires_approval else "Completed"
        return self._save(bead.copy(**changes), f"{word}: {bead.title} ({bead_id}){_by(by)}", "complete", bead.assigned_to)

    def fail(self, bead_id: str, reason: str, *, by: str = "") -> Bead:
        bead = self.get(bead_id)
        status = advance(bead_id, bead.status, Verb.FAIL)
        check_reason("fail", reason)
        return self._save(bead.copy(status=status, result=reason, lease_until=0.0),
                          f"Failed: {bead.title} ({bead_id}){_by(by)}: {reason}", "fail", reason)

    def approve(self, bead_id: str, who: Who) -> Bead:
        bead, status = self.check_decision(bead_id, True, who)
        return self._save(bead.copy(status=status, approved_by=who.name),
                          f"Approved: {bead.title} ({bead_id}) by {who.name}", "approve", who.name)

    def reject(self, bead_id: str, reason: str, who: Who) -> Bead:
        bead, status = self.check_decision(bead_id, False, who)
        check_reason("reject", reason)
        return self._save(bead.copy(status=status, review=reason),
                          f"Rejected: {bead.title} ({bead_id}) by {who.name}: {reason}", "reject", f"by {who.name}: {reason}")

    def check_decision(self, bead_id: str, approved: bool, who: Who) -> tuple[Bead, Status]:
        """The bead and its status after `approve` (or `reject`) by WHO, with nothing changed; refused if it
        cannot take the verb, or WHO did the work (SPEC §6). Every route to a decision comes through here:
        the bead's ctl, an APPROVAL_RESPONSE (checked at its Twrite, and again when it is sent)."""
        verb = Verb.APPROVE if approved else Verb.REJECT
        bead = self.get(bead_id)
        status = advance(bead_id, bead.status, verb)
        if bead.assigned_to and bead.assigned_to in who.names():
            raise NotPermitted(f"{verb.value}: {bead.assigned_to} did the work on bead {bead.id}; someone else must "
                               f"{verb.value} it (the one who inspects is never the one who built)")
        return bead, status

    def reopen(self, bead_id: str) -> Bead:
        bead = self.get(bead_id)
        status = advance(bead_id, bead.status, Verb.REOPEN)
        return self._save(bead.copy(status=status, assigned_to="", lease_until=0.0, approved_by="", held_by_session=False),
                          f"Reopened: {bead.title} ({bead_id})", "reopen")

    def rework(self, bead_id: str, why: str) -> Bead:
        """Back to `pending` from `completed`: the merge queue could not merge its branch (which is kept)."""
        bead = self.get(bead_id)
        status = advance(bead_id, bead.status, Verb.REWORK)
        return self._save(bead.copy(status=status, assigned_to="", lease_until=0.0, approved_by="", held_by_session=False),
                          f"Returned for rework: {bead.title} ({bead_id}): {why}", "rework", why)

    def set_text(self, bead_id: str, field: str, text: str, *, by: str = "") -> Bead:
        """Write `description` or `result` (the files of the same names)."""
        bead = self.get(bead_id)
        check_text(field, text)
        return self._save(bead.copy(**{field: text}), f"Updated {field}: {bead_id}{_by(by)}", f"set-{field}")

    def set_convoy(self, bead_id: str, convoy: str) -> Bead:
        """Put a bead in a convoy (or take it out, with ""); convoys.py checks the convoy's side."""
        bead = self.get(bead_id)
        what = f"Added to convoy {convoy}: {bead_id}" if convoy else f"Removed from convoy {bead.convoy}: {bead_id}"
        return self._save(bead.copy(convoy=convoy), what, "convoy", convoy or "-")

    # ------------------------------------------------------------ reactions

    def _session_ended(self, event: SessionEnded) -> None:
        """SPEC §6: a bead held by a session that is gone goes back to pending."""
        for bead in list(self._beads.values()):
            if bead.status is Status.IN_PROGRESS and bead.assigned_to == event.session and bead.held_by_session:
                self._release(bead, f"session {event.session} {event.how}")

    def _session_renamed(self, event: SessionRenamed) -> None:
        """A bead a session holds follows it to its new name (a restored session whose name is reserved now)."""
        for bead in list(self._beads.values()):
            if bead.status in HELD and bead.assigned_to == event.old and bead.held_by_session:
                self._save_reporting(bead.copy(assigned_to=event.new), f"Holder renamed: {bead.id} held by "
                                     f"{event.new}, formerly {event.old}", "reassign", event.new)

    def expire_leases(self) -> float | None:
        """Release the beads whose lease ran out; returns when the next lease runs out, if one will."""
        now, next_end = self.clock(), None
        for bead in sorted((self._beads[i] for i in self._leased), key=lambda b: b.lease_until):
            if _leased(bead):
                if bead.lease_until <= now:
                    self._release(bead, f"the lease of {bead.assigned_to} ran out")
                else:
                    next_end = min(next_end or bead.lease_until, bead.lease_until)
        return next_end

    async def run_leases(self) -> None:
        """For ever: release beads whose lease runs out, when it runs out."""
        while True:
            version = self.changes.version
            next_end = self.expire_leases()
            delay = 3600.0 if next_end is None else max(next_end - self.clock(), 0.0)
            with trio.move_on_after(delay):
                await self.changes.wait_changed(version)

    def _release(self, bead: Bead, why: str) -> None:
        status = advance(bead.id, bead.status, Verb.RELEASE)
        self._save_reporting(bead.copy(status=status, assigned_to="", lease_until=0.0, held_by_session=False),
                             f"Released: {bead.id}: {why}", "release", why)

    def _save_reporting(self, bead: Bead, message: str, verb: str, detail: str) -> None:
        """A change no client asked for (a reaction): a failure is reported, and the others go on."""
        try:
            self._save(bead, message, verb, detail)
        except AnvilError as exc:
            if self.bus.journal is not None:
                self.bus.journal.append(f"- beads: cannot {verb} {bead.id}: {exc.message}")

    # ------------------------------------------------------------ saving

    def _undone(self, bead_id: str, why: str, was: Bead, now: Bead | None) -> None:
        if now is not None:  # what follows the board's changes sees it as one (a bead gone: it looks at all)
            self.replacements.note(was, now)
        (self._leased.add if now is not None and _leased(now) else self._leased.discard)(bead_id)
        self.changes.bump()
        self.changed_at = int(time.time())
        if self.bus.journal is not None:
            self.bus.journal.append(f"- beads: {why}; bead {bead_id} is back to what its file holds")

    def _save(self, bead: Bead, message: str, verb: str, detail: str = "", *, new: bool = False) -> Bead:
        old = self._beads.get(bead.id)
        self._store.save(bead, message, new=new)
        self.replacements.note(old, bead)
        (self._leased.add if _leased(bead) else self._leased.discard)(bead.id)
        self.changes.bump()
        self.changed_at = int(time.time())
        self.bus.publish(BeadChanged(bead.id, verb, bead.status.value, detail, bead.convoy))
        return bead


def _leased(bead: Bead) -> bool:
    return bead.status is Status.IN_PROGRESS and bool(bead.lease_until)


def _no_convoys(convoy: str) -> None:
    raise NotFound(f"no convoy {convoy!r}")


def _by(session: str) -> str:
    """Who did it, in a history message, when it was a session (a person's writes say nothing, as before)."""
    return f" by {session}" if session else ""
