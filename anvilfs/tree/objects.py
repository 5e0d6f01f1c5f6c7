"""A directory of objects: one subdirectory per object (a session, a bead, a convoy), built on demand.

The domain says how to find an object by name and list them all; a
subdirectory is built the first time it is needed and kept while that same
object lives (found again by identity, so a new object that takes an old
name gets a fresh directory), and forgotten once its object is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from .nodes import Directory, Node

T = TypeVar("T")


class ObjectDirectories(Generic[T]):
    def __init__(self, find: Callable[[str], T | None], every: Callable[[], Iterable[T]],
                 name_of: Callable[[T], str], build: Callable[[T], Directory]):
        self._find, self._every, self._name_of, self._build = find, every, name_of, build
        self._built: dict[str, tuple[T, Directory]] = {}
        self._listed: tuple[list[T], list[Directory]] = ([], [])  # the objects of the last listing, their directories
        self._pending: Iterator[T] | None = None  # the objects build_some has still to look at
        # what build_some does with each directory it built: the server encodes ahead what a listing sends
        self.warm: Callable[[Directory], None] | None = None

    def _dir(self, obj: T) -> Directory:
        name = self._name_of(obj)
        known = self._built.get(name)
        if known is None or known[0] is not obj:
            known = self._built[name] = (obj, self._build(obj))
        return known[1]

    def lookup(self, name: str) -> Directory | None:
        obj = self._find(name)
        if obj is None:
            self._built.pop(name, None)
            return None
        known = self._built.get(name)
        if known is not None and known[0] is obj:  # built before for this same object: every walk to it
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
        self.children()  # all built: the listing too, so that the first a client asks for finds it kept
        return False

    def children(self) -> list[Node]:
        """A directory for each object, in the domain's order. The last listing's are kept and only those
        of objects replaced or added since are looked up again: found place by place, by identity, as
        beads/view.py's Replaced does (10,000 lookups a listing of beads/ cost 5-10 ms, issue 32)."""
        objects = list(self._every())
        if len(self._built) > len(objects):  # some are gone: forget their directories
            names = {self._name_of(o) for o in objects}
            self._built = {n: known for n, known in self._built.items() if n in names}
        seen, dirs = self._listed
        if len(objects) < len(seen):
            dirs = [self._dir(o) for o in objects]
        else:
            dirs = dirs[:]  # a listing handed out is a fid's: never changed under it
            for place in [i for i, (new, old) in enumerate(zip(objects, seen)) if new is not old]:
                dirs[place] = self._dir(objects[place])
            dirs += [self._dir(o) for o in objects[len(seen):]]
        self._listed = (objects, dirs)
        return dirs
