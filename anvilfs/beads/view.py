"""The texts drawn from every bead (`beads/list`, `ready`, `ready.<role>`, `graph`), kept a change at a time.

Rendered whole, each showed 10,000 beads at every change of the board and held the server's loop for
20-150 ms (issue 32). A BoardView keeps each bead's lines and its readiness and wave, and at each look
redoes only those of the beads that changed since the last one, and of the beads that depend on a bead
whose completion changed. Which beads changed is found by identity (Replaced): a change of a bead
replaces its object (Collection.save) and keeps its place in the board's dict. The texts are exactly
the full renders' (graph.render, bead_line); tests/unit/test_beads_view.py compares them after
random changes.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable
from itertools import compress
from typing import Generic, TypeVar

from .graph import BLOCKED_HEADING, graph_line, waves
from .model import Bead
from .states import Status

T = TypeVar("T")
_DONE, _BLOCKED = 0, -1  # graph groups: a wave's number for the open beads, these for the rest
_WHOLE = 1000  # at least this many changed beads (and an eighth of them all): redo it all, in one go
# `ready` texts: while fewer than one bead in SPARSE is ready, they are made from the ready beads alone (their
# ids kept in the board's order), not from a pass over every bead (ready.<role>: 0.23 ms of 10,000 at each change)
SPARSE = 16


class Replacements(Generic[T]):
    """The objects its owner replaced in a dict or added to it, (old, new) in order, noted as it does: a
    follower takes those since its last look (Replaced), and a change costs what it changed, not a look
    at every object."""

    KEPT = 4096  # notes kept at least; a follower that has not looked for longer looks at every object

    def __init__(self) -> None:
        self._notes: list[tuple[T | None, T]] = []
        self._first = 0  # the number of the first note kept

    def note(self, old: T | None, new: T) -> None:
        self._notes.append((old, new))
        if len(self._notes) > 2 * self.KEPT:
            del self._notes[:self.KEPT]
            self._first += self.KEPT

    @property
    def end(self) -> int:
        return self._first + len(self._notes)

    def since(self, mark: int) -> list[tuple[T | None, T]] | None:
        return None if mark < self._first else self._notes[mark - self._first:]


class Replaced(Generic[T]):
    """What changed in a dict of objects since the last look: each object replaced, or added at its end.

    From the owner's notes (Replacements) when it keeps them and they account for every object; else
    by comparing the objects place by place (in C, a pass over 10,000 in about a millisecond)."""

    def __init__(self, items: dict[str, T], notes: Replacements[T] | None = None):
        self._items, self._notes = items, notes
        self._seen: list[T] = []
        self._mark: int | None = None  # the notes' end at the last look
        self._count = 0  # the objects then

    def look(self) -> list[tuple[T | None, T]] | None:
        """(old, new) for each object replaced since the last look, (None, new) for each added (one pair a
        change: an object changed twice comes twice, in order); None if the dict shrank or changed its
        order, or changed without a note (then every object must be looked at again)."""
        if self._notes is not None and self._mark is not None:
            noted, self._mark = self._notes.since(self._mark), self._notes.end
            added = sum(old is None for old, _ in noted) if noted is not None else 0
            count, self._count = self._count + added, len(self._items)
            return noted if noted is not None and count == len(self._items) else None
        values, seen = list(self._items.values()), self._seen
        self._seen = values if self._notes is None else []
        self._mark, self._count = (self._notes.end if self._notes is not None else None), len(values)
        if len(values) < len(seen):
            return None
        changed = [(old, new) for new, old in zip(values, seen) if new is not old]
        if any(old.id != new.id for old, new in changed):  # type: ignore[attr-defined]
            return None
        changed += [(None, new) for new in values[len(seen):]]
        return changed


def bead_line(bead: Bead) -> str:
    """One line of `list` and `ready`: id status role assigned_to title (the same function for both)."""
    return f"{bead.id} {bead.status.value} {bead.role} {bead.assigned_to or '-'} {bead.title}\n"


class BoardView:
    """The board's beads as `list`, `ready` and `graph` show them; `look()` brings it up to date."""

    def __init__(self, beads: dict[str, Bead], broken: Callable[[], dict[str, str]], version: Callable[[], object],
                 notes: Replacements[Bead] | None = None):
        self._beads, self._broken, self._version = beads, broken, version
        self._replaced = Replaced(beads, notes)
        self._looked: object = None
        self._lines: dict[str, str] = {}  # bead -> its line of `list`, in the board's order
        self._ready: dict[str, bool] = {}  # bead -> whether it is ready, in the same order
        self._ready_ids: set[str] = set()  # the ready ones
        self._place: dict[str, int] = {}  # bead -> its place in the board's order
        self._ready_order: list[str] | None = None  # the ready ones by place, made at the first ready text of a look
        self._roles: dict[str, tuple[int, list[bool]]] = {}  # role -> (beads then, whether each has it)
        self._role_names: list[str] = []  # sorted: the roles some bead has
        self._dependents: dict[str, list[str]] = {}  # bead -> the beads that depend on it
        self._graph = _Graph(beads)

    def look(self) -> None:
        """Bring the texts up to date with the board (at once if it has not changed)."""
        now = (self._version(), len(self._beads))
        if now == self._looked:
            return
        self._looked = now
        self._ready_order = None
        changed = self._replaced.look()
        if changed is None or not self._lines or len(changed) >= max(_WHOLE, len(self._beads) // 8):
            self._whole()
            return
        flipped = [new.id for old, new in changed if old is None or _done(old) != _done(new)]
        if any(old is not None and old.depends_on != new.depends_on for old, new in changed):
            self._whole()  # no verb changes them: a file changed under the board
            return
        for old, new in changed:
            self._lines[new.id] = bead_line(new)
            if old is None or old.role != new.role:
                self._roles.clear()
                if new.role not in self._role_names:
                    insort(self._role_names, new.role)
                if old is not None and not any(b.role == old.role for b in self._beads.values()):
                    self._role_names.remove(old.role)
            if old is None:
                self._ready[new.id] = False  # its place, in the board's order: the loop below says whether
                self._place[new.id] = len(self._place)
                for dep in dict.fromkeys(new.depends_on):
                    self._dependents.setdefault(dep, []).append(new.id)
        touched = {new.id for _, new in changed}
        for bead_id in flipped:
            touched.update(self._dependents.get(bead_id, ()))
        for bead_id in touched:
            ready = self._ready[bead_id] = self._is_ready(self._beads[bead_id])
            (self._ready_ids.add if ready else self._ready_ids.discard)(bead_id)
        if not self._graph.update(flipped, touched, self._dependents):
            self._graph.whole()

    def _whole(self) -> None:
        beads = self._beads
        self._lines = {i: bead_line(b) for i, b in beads.items()}
        self._ready = {i: self._is_ready(b) for i, b in beads.items()}
        self._ready_ids = {i for i, ready in self._ready.items() if ready}
        self._place = {i: at for at, i in enumerate(beads)}
        self._roles.clear()
        self._role_names = sorted({b.role for b in beads.values()})
        self._dependents = {}
        for bead in beads.values():
            for dep in dict.fromkeys(bead.depends_on):
                self._dependents.setdefault(dep, []).append(bead.id)
        self._graph.whole()

    def _is_ready(self, bead: Bead) -> bool:
        """Claimable now: pending, and every dependency completed (Board.is_ready's rule)."""
        beads = self._beads
        return bead.status is Status.PENDING and all(
            (dep := beads.get(d)) is not None and dep.status is Status.COMPLETED for d in bead.depends_on)

    # ------------------------------------------------------------ the texts

    def roles(self) -> list[str]:
        """The roles some bead has, sorted."""
        self.look()
        return list(self._role_names)

    def list_text(self) -> str:
        self.look()
        return "".join(self._lines.values()) + "".join(f"{i} broken - - {why}\n" for i, why in self._broken().items())

    def ready_text(self, role: str | None = None) -> str:
        self.look()
        if len(self._ready_ids) * SPARSE < len(self._lines):
            if self._ready_order is None:
                self._ready_order = sorted(self._ready_ids, key=self._place.__getitem__)
            lines, beads = self._lines, self._beads
            if role is None:
                return "".join([lines[i] for i in self._ready_order])
            return "".join([lines[i] for i in self._ready_order if beads[i].role == role])
        if role is None:
            return "".join(compress(self._lines.values(), self._ready.values()))
        kept = self._roles.get(role)
        if kept is None or kept[0] != len(self._beads):
            kept = self._roles[role] = (len(self._beads), [b.role == role for b in self._beads.values()])
        return "".join(compress(self._lines.values(), map(operator.and_, self._ready.values(), kept[1])))

    def graph_text(self) -> str:
        self.look()
        return self._graph.text()


def _done(bead: Bead) -> bool:
    return bead.status is Status.COMPLETED


_WAVE_HEADINGS = ["wave 0\n"]  # `wave N` lines by N, for every graph: made as far as the longest chain needed


class _Graph:
    """`graph`'s groups (each wave, done, blocked), each bead's line, and each group's text, kept."""

    def __init__(self, beads: dict[str, Bead]):
        self._beads = beads
        self._group: dict[str, int] = {}  # bead -> its wave, or _DONE, or _BLOCKED
        self._members: dict[int, list[str]] = {}  # group -> its beads, sorted by id
        self._lines: dict[str, str] = {}  # bead -> its line of `graph`
        self._texts: dict[int, str] = {}  # group -> its lines joined (dropped when one of them changes)
        # The whole text's parts (each wave's heading and lines, then done's and blocked's) and where each
        # group's lines are in them: a change that keeps every group redoes only its groups' parts (a chain
        # of 1,000 beads has 1,000 waves: going through them all at each claim was half of a listing's work)
        self._parts: list[str] | None = None
        self._part_of: dict[int, int] = {}
        self._stale: set[int | None] = set()  # the groups whose lines changed since the parts were last brought up to date

    def whole(self) -> None:
        levels, done, blocked = waves(self._beads)
        self._group, self._members, self._texts, self._parts = {}, {}, {}, None
        for number, level in enumerate(levels, 1):
            self._place(level, number)
        self._place(done, _DONE)
        self._place(blocked, _BLOCKED)
        self._lines = {i: graph_line(b, self._beads) for i, b in self._beads.items()}

    def _place(self, beads: list[Bead], group: int) -> None:
        if beads:
            self._members[group] = [b.id for b in beads]
            self._group.update((b.id, group) for b in beads)

    def update(self, flipped: list[str], touched: set[str], dependents: dict[str, list[str]]) -> bool:
        """Beads `flipped` into or out of completion (or added), the lines of those `touched` (they and their
        dependents); False if it must be done whole (a wave past the count of beads: a dependency cycle that
        a reopened bead closed again, which only whole() tells from a chain)."""
        beads = self._beads
        for bead_id in touched:
            self._lines[bead_id] = graph_line(beads[bead_id], beads)
            self._drop(self._group.get(bead_id))
        # Each bead's group is the one its dependencies' groups give it (_wave_of): redone for the flipped
        # beads, then for the dependents of each bead whose group moved, until none moves. Without a cycle
        # those rules have one answer, waves()'s; a cycle only has a blocked one, or has waves that grow
        # for ever here, which the bound on them catches.
        work, queued, most = deque(flipped), set(flipped), len(beads) + 1
        while work:
            bead_id = work.popleft()
            queued.discard(bead_id)
            group = self._wave_of(beads[bead_id])
            if group > most:
                return False
            if group != self._group.get(bead_id):
                self._move(bead_id, group)
                for dependent in dependents.get(bead_id, ()):
                    if dependent not in queued:
                        queued.add(dependent)
                        work.append(dependent)
        return True

    def _wave_of(self, bead: Bead) -> int:
        """One past the latest wave among its open dependencies (a completed one counts as wave 0); blocked
        if one does not exist or is blocked: what waves() finds, for a bead whose dependencies are placed."""
        if _done(bead):
            return _DONE
        latest = 0
        for dep in bead.depends_on:
            group = self._group.get(dep, _BLOCKED) if dep in self._beads else _BLOCKED
            if group == _BLOCKED:
                return _BLOCKED
            latest = max(latest, group)
        return latest + 1

    def _move(self, bead_id: str, group: int) -> None:
        old = self._group.get(bead_id)
        if old is not None:
            members = self._members[old]
            del members[bisect_left(members, bead_id)]
            if not members:
                del self._members[old]
                self._parts = None  # a group gone: the parts are laid out again
            self._drop(old)
        self._group[bead_id] = group
        if group not in self._members:
            self._parts = None  # a group new
        insort(self._members.setdefault(group, []), bead_id)
        self._drop(group)

    def _drop(self, group: int | None) -> None:
        self._texts.pop(group, None)
        self._stale.add(group)

    def _group_text(self, group: int) -> str:
        text = self._texts.get(group)
        if text is None:
            lines = self._lines
            text = self._texts[group] = "".join([lines[i] for i in self._members[group]])
        return text

    def text(self) -> str:
        parts = self._parts
        if parts is None:
            return self._lay_out()
        part_of, group_text = self._part_of, self._group_text
        for group in self._stale:
            if group in part_of:
                parts[part_of[group]] = group_text(group)
        self._stale.clear()
        return "".join(parts)

    def _lay_out(self) -> str:
        last = max((g for g in self._members if g > 0), default=0)
        while len(_WAVE_HEADINGS) <= last:  # a chain of 10,000 beads has 10,000 waves: headings made once
            _WAVE_HEADINGS.append(f"wave {len(_WAVE_HEADINGS)}\n")
        members, group_text = self._members, self._group_text
        parts, part_of = [], {}
        for number in range(1, last + 1):
            parts.append(_WAVE_HEADINGS[number])
            if number in members:
                part_of[number] = len(parts)
                parts.append(group_text(number))
        for group, heading in ((_DONE, "done\n"), (_BLOCKED, BLOCKED_HEADING + "\n")):
            if group in members:
                parts.append(heading)
                part_of[group] = len(parts)
                parts.append(group_text(group))
        self._parts, self._part_of = parts, part_of
        self._stale.clear()
        return "".join(parts)
