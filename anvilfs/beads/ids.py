"""Ids readable from a title: "Research auth system" -> research-auth-001.

The first two words that say something (small words skipped, a few long
ones abbreviated), then a number that only grows, shared by all ids of a
kind: ids are unique even for beads created at the same moment, and never
reused, because the server makes them one at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_SKIP = frozenset({"a", "an", "the", "of", "to", "for", "and", "or", "in", "on", "with", "by", "from", "at"})
_SHORT = {"implement": "impl", "implementation": "impl", "documentation": "docs", "configuration": "config",
          "investigate": "invest", "refactoring": "refactor", "integration": "integ", "performance": "perf"}
_WORD = re.compile(r"[a-z0-9]+")
_NUMBERED = re.compile(r"-(\d{3,})\Z")
ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\Z")


def slug(title: str, fallback: str) -> str:
    words = [w for w in _WORD.findall(title.lower()) if w not in _SKIP]
    picked = [_SHORT.get(w, w)[:12] for w in words[:2]]
    return "-".join(picked) or fallback


def number_of(object_id: str) -> int:
    """The number at the end of an id (0 if none): where the counter goes on after a restart."""
    match = _NUMBERED.search(object_id)
    return int(match.group(1)) if match else 0


class IdMaker:
    def __init__(self, fallback: str):
        self.fallback = fallback
        self.last = 0

    def seen(self, object_id: str) -> None:
        self.last = max(self.last, number_of(object_id))

    def next(self, title: str, taken: Callable[[str], bool]) -> str:
        while True:
            self.last += 1
            candidate = f"{slug(title, self.fallback)}-{self.last:03d}"
            if not taken(candidate):
                return candidate
