"""`owns`: the paths a bead may write (CONCEPTS.md), and whether two beads' paths can meet.

An entry is a literal path (`docs/hello.md`), a directory ending in `/`
(all below it), or a glob (`docs/*.md`, `src/**`). Two entries overlap if
some path could match both. The check is conservative: where two globs
could meet it says they do, because a wrong "no" lets two workers fight
over a file, while a wrong "yes" only makes one wait.
"""

from __future__ import annotations

import fnmatch
import re

_MAGIC = re.compile(r"[*?\[]")
MAX_ENTRY = 1024


def check_entry(entry: str) -> str | None:
    """Why an owns entry is unusable, or None."""
    if not entry or len(entry) > MAX_ENTRY:
        return f"an owns entry is 1-{MAX_ENTRY} characters"
    if entry.startswith("/") or ".." in entry.split("/"):
        return f"owns entry {entry!r} must be a path relative to the work tree, without '..'"
    return None


def _segments(entry: str) -> list[str]:
    parts = [p for p in entry.split("/") if p and p != "."]
    if entry.endswith("/"):
        parts.append("**")
    return parts


def _segment_overlap(a: str, b: str) -> bool:
    a_magic, b_magic = bool(_MAGIC.search(a)), bool(_MAGIC.search(b))
    if not a_magic and not b_magic:
        return a == b
    if not a_magic:
        return fnmatch.fnmatchcase(a, b)
    if not b_magic:
        return fnmatch.fnmatchcase(b, a)
    # two globs: compatible literal heads and tails could meet (conservative)
    head_a, head_b = _MAGIC.split(a, 1)[0], _MAGIC.split(b, 1)[0]
    tail_a, tail_b = _MAGIC.split(a)[-1], _MAGIC.split(b)[-1]
    heads = head_a.startswith(head_b) or head_b.startswith(head_a)
    tails = tail_a.endswith(tail_b) or tail_b.endswith(tail_a)
    return heads and tails


def _overlap(a: list[str], b: list[str]) -> bool:
    if not a or not b:
        # one pattern is used up: the other can still match nothing more only through '**'
        return all(s == "**" for s in a + b) or (not a and not b)
    if a[0] == "**":
        return _overlap(a[1:], b) or _overlap(a, b[1:])
    if b[0] == "**":
        return _overlap(a, b[1:]) or _overlap(a[1:], b)
    return _segment_overlap(a[0], b[0]) and _overlap(a[1:], b[1:])


def overlap(a: str, b: str) -> bool:
    """Could one path match both owns entries? (a directory `x/` owns everything below x)"""
    return _overlap(_segments(a), _segments(b))


def first_overlap(mine: list[str], theirs: list[str]) -> tuple[str, str] | None:
    for a in mine:
        for b in theirs:
            if overlap(a, b):
                return a, b
    return None
