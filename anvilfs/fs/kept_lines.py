"""A text of a line per object, each line made again only when what it shows moved.

`list` (a line per session) and `convoys/list` (a line per convoy) were made whole each time their
stamp moved: at every change of any session's state, and of any bead. With 1,000 sessions and 1,000
convoys that was 1.5 and 2.5 ms of the loop each time the web (or anyone) looked after a change, in
the middle of other clients' reads (issue 32, item 6). A KeptLines keeps each object's line with what it
showed, and makes again only the lines of the objects whose `shows` changed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class KeptLines(Generic[T]):
    """`text(objects)`: line(object) for each, in their order, joined; a line is made again only when
    `shows(object)` is unequal to what it was when the line was made.

    `shows(object)` is (a name unique among the objects, then everything the line is made from): the
    line must be a function of it alone. Objects in it are compared with ==, so an object replaced by
    an equal one keeps its line, and one changed in place must be named by the fields that change
    (a session's state), not by the object alone. The lines of objects no longer given are dropped at
    each text, so at most one line per object is kept."""

    __slots__ = ("_shows", "_line", "_kept")

    def __init__(self, shows: Callable[[T], tuple[Hashable, ...]], line: Callable[[T], str]):
        self._shows, self._line = shows, line
        self._kept: dict[Hashable, tuple[tuple, str]] = {}  # name -> (what it showed, its line)

    def text(self, objects: Iterable[T]) -> str:
        shows, make, kept = self._shows, self._line, self._kept
        fresh: dict[Hashable, tuple[tuple, str]] = {}
        lines = []
        for obj in objects:
            now = shows(obj)
            entry = kept.get(now[0])
            if entry is None or entry[0] != now:
                entry = (now, make(obj))
            fresh[now[0]] = entry
            lines.append(entry[1])
        self._kept = fresh
        return "".join(lines)
