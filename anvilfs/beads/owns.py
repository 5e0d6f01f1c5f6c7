"""`owns`: the paths a bead may write (CONCEPTS.md), and whether two beads' paths can meet.

An entry is a literal path (`docs/hello.md`), a directory ending in `/`
(all below it), or a glob (`docs/*.md`, `src/**`). Two entries overlap if
some path could match both. The check is conservative: where two globs
could meet it says they do, because a wrong "no" lets two workers fight
over a file, while a wrong "yes" only makes one wait.
"""

from __future__ import annotations

import fnmatch
from functools import lru_cache
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


@lru_cache(maxsize=4096)  # a long entry repeats its segments: each pair is matched once
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
    """Could some path match both segment lists? `meets[j]` answers it for a[i:] and b[j:], from the ends
    back: each pair of tails is decided once (len(a) x len(b) steps, no recursion), where trying both ways
    at each '**' took exponential time ("**/**/.../x" against "**/**/.../y": minutes, issue 32)."""
    n, m = len(a), len(b)
    # a[i:] against nothing (and nothing against b[j:]) meet when what is left is all '**'
    rest_a = [True] * (n + 1)
    for i in range(n - 1, -1, -1):
        rest_a[i] = rest_a[i + 1] and a[i] == "**"
    meets = [True] * (m + 1)  # the row for i == n: nothing of a left
    for j in range(m - 1, -1, -1):
        meets[j] = meets[j + 1] and b[j] == "**"
    for i in range(n - 1, -1, -1):
        below = meets  # the row for i + 1
        meets = [False] * m + [rest_a[i]]
        for j in range(m - 1, -1, -1):
            if a[i] == "**" or b[j] == "**":
                meets[j] = below[j] or meets[j + 1]  # a '**' takes one more segment of the other, or none
            else:
                meets[j] = below[j + 1] and _segment_overlap(a[i], b[j])
    return meets[0]


def overlap(a: str, b: str) -> bool:
    """Could one path match both owns entries? (a directory `x/` owns everything below x)"""
    return _overlap(_segments(a), _segments(b))


def first_overlap(mine: list[str], theirs: list[str]) -> tuple[str, str] | None:
    for a in mine:
        for b in theirs:
            if overlap(a, b):
                return a, b
    return None
