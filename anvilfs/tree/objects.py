"""A directory of objects: one subdirectory per object (a session, a bead, a convoy), built on demand.

The domain says how to find an object by name and list them all; a
subdirectory is built the first time it is needed and kept while that same
object lives (found again by identity, so a new object that takes an old
name gets a fresh directory), and forgotten once its object is gone.

A subdirectory is cheap; its files are not (about 200 objects for a bead's).
With ``keep_entries=N`` only the N subdirectories walked into last keep
their files, the others' are dropped and made again when next walked into:
a client that walks every bead (`grep -r` on a mount) no longer leaves two
million objects behind, which the collector then went through for 50-65 ms
at a time with every other client waiting (issue 32).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from .nodes import Directory, Node

T = TypeVar("T")


Changes = Callable[[], "list[tuple[T | None, T]] | None"]


class ObjectDirectories(Generic[T]):
    """`changed`, if the domain can say it, gives what was replaced or added since its last call, (old, new)
    in order, or None when it cannot tell (something removed): a listing after a change then updates the
    last one at those places only (beads/view.py's Replaced over the board's notes)."""

    def __init__(self, find: Callable[[str], T | None], every: Callable[[], Iterable[T]],
                 name_of: Callable[[T], str], build: Callable[[T], Directory], *, keep_entries: int | None = None,
                 forgotten: Callable[[Directory], None] = lambda directory: None, changed: Changes | None = None):
        self._find, self._every, self._name_of, self._build = find, every, name_of, build
        self._keep, self._forgotten = keep_entries, forgotten  # forgotten(d): d's files were dropped
        self._changed = changed
        self._places: dict[str, int] | None = None  # each object's place in the last listing, where `changed` is kept
        self._with_entries: OrderedDict[Directory, None] = OrderedDict()  # walked into last, last
        self._built: dict[str, tuple[T, Directory]] = {}
        self._listed: tuple[list[T], list[Directory]] = ([], [])  # the objects of the last listing, their directories
        self._pending: Iterator[T] | None = None  # the objects build_some has still to look at
        # what build_some does with each directory it built: the server encodes ahead what a listing sends
        self.warm: Callable[[Directory], None] | None = None

    def _dir(self, obj: T) -> Directory:
        name = self._name_of(obj)
        known = self._built.get(name)
        if known is None or known[0] is not obj:
            replaced = known is not None and self._with_entries.pop(known[1], False) is None
            if replaced:  # its files go now: a listing the server keeps (server/listings.py) still holds it
                known[1].forget_entries()
            known = self._built[name] = (obj, self._build(obj))
            if self._keep is not None:
                known[1].on_made = self._entries_made
                if replaced:  # its place, so that what goes with its files (their stamps) is let go in turn
                    self._entries_made(known[1])
        return known[1]

    def _entries_made(self, directory: Directory) -> None:
        self._with_entries[directory] = None
        while len(self._with_entries) > self._keep:
            dropped = self._with_entries.popitem(last=False)[0]
            dropped.forget_entries()
            self._forgotten(dropped)

    def lookup(self, name: str) -> Directory | None:
        obj = self._find(name)
        if obj is None:
            gone = self._built.pop(name, None)
            if gone is not None and self._with_entries.pop(gone[1], False) is None:
                gone[1].forget_entries()  # as a replaced one's (_dir)
                self._forgotten(gone[1])
            return None
        known = self._built.get(name)
        if known is not None and known[0] is obj:  # built before for this same object: every walk to it
            if known[1] in self._with_entries:
                self._with_entries.move_to_end(known[1])
            return known[1]
        return self._dir(obj)

    def build_some(self, most: int) -> bool:
        """Build up to `most` of the directories not built yet; whether some are left. A start builds them
        a slice at a time between other work, so that the first listing of 10,000 beads does not build
        them all in one go, holding every other client (issue 32). Each slice goes on where the last one
        stopped (looking through all the objects at each slice cost more than the building); objects that
        came meanwhile are built with the listing the last slice leaves kept."""
        if self._pending is None:
            self._pending = iter(list(self._every()))
        built = 0
        for obj in self._pending:
            known = self._built.get(self._name_of(obj))
            if known is None or known[0] is not obj:
                directory = self._dir(obj)
                if self.warm is not None:
                    self.warm(directory)
                built += 1
                if built == most:
                    return True
        self._pending = None
        return False  # all built: the caller makes the listing too (children()), in a step of its own

    def children(self) -> list[Node]:
        """A directory for each object, in the domain's order. The last listing's are kept and only those
        of objects replaced or added since are looked up again: from `changed`, or found place by place, by
        identity (10,000 lookups a listing of beads/ cost 5-10 ms; the pass by identity 1-2 ms, at the first
        read of `ls beads/` after each change: issue 32)."""
        changes = self._changed() if self._changed is not None else None
        if changes is not None and self._places is not None:
            return self._update(changes)
        objects = list(self._every())
        if len(self._built) > len(objects):  # some are gone: forget their directories
            names = {self._name_of(o) for o in objects}
            self._built = {n: known for n, known in self._built.items() if n in names}
            kept = {known[1] for known in self._built.values()}
            for gone in [d for d in self._with_entries if d not in kept]:
                del self._with_entries[gone]
                gone.forget_entries()
                self._forgotten(gone)
        seen, dirs = self._listed
        if len(objects) < len(seen):
            dirs = [self._dir(o) for o in objects]
        else:
            dirs = dirs[:]  # a listing handed out is a fid's: never changed under it
            for place in [i for i, (new, old) in enumerate(zip(objects, seen)) if new is not old]:
                dirs[place] = self._dir(objects[place])
            dirs += [self._dir(o) for o in objects[len(seen):]]
        self._listed = (objects, dirs)
        if self._changed is not None:
            self._places = {self._name_of(o): i for i, o in enumerate(objects)}
        return dirs

    def _update(self, changes: list) -> list[Node]:
        """The last listing with the objects `changed` gave built in their places, or added at its end."""
        seen, dirs = self._listed
        if not changes:
            return dirs  # never changed under a fid that holds it: every update makes a new list
        latest = {self._name_of(new): new for _, new in changes}  # the last of an object changed twice
        dirs, places = dirs[:], self._places
        for name, obj in latest.items():
            place = places.get(name)
            if place is None:
                place = places[name] = len(dirs)
                seen.append(obj)
                dirs.append(self._dir(obj))
            else:
                seen[place] = obj
                dirs[place] = self._dir(obj)
        self._listed = (seen, dirs)
        return dirs
