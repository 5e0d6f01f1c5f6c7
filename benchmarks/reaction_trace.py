"""The reaction taken apart: what benchmarks/conductor.py --trace prints after its blocking run.

The marks (trace/sitecustomize.py) of each session's turns are matched in
order: its `await`, the conductor's `wait` answered, the conductor starting
the delivery (after its own record's fdatasync), the prompt's clunk at the
server, `prompt queued` (after the prompt log's fdatasync). Each part's
median, p90 and p99, and what each part averaged in the slowest 2% of the
reactions: whether the tail is one part's or everyone's.
"""

from __future__ import annotations

import collections
import json
import statistics
from pathlib import Path

PARTS = [
    ("wake: await -> the conductor's wait answered", "await", "woke"),
    ("conductor: -> delivery begins (its record)", "woke", "deliver"),
    ("delivery: -> the clunk at the server", "deliver", "submit"),
    ("server: -> prompt queued (the prompt log)", "submit", "queued"),
    ("whole: await -> prompt queued", "await", "queued"),
]


def reactions(trace_dir: Path) -> list[dict[str, float]]:
    by_session = collections.defaultdict(list)
    for file in trace_dir.glob("*.json"):
        for t, kind, who in json.loads(file.read_text()):
            by_session[who].append((t, kind))
    found = []
    for marks in by_session.values():
        current = None
        for t, kind in sorted(marks):
            if kind == "await":
                current = {"await": t}
            elif current is not None and kind not in current:
                current[kind] = t
                if kind == "queued":
                    if len(current) == 5:
                        found.append(current)
                    current = None
    return found


def report(trace_dir: Path) -> None:
    found = reactions(trace_dir)
    if not found:
        print("  trace: no whole reaction found (was the conductor's `wait` used?)")
        return
    print(f"  the reaction taken apart ({len(found)} traced), median / p90 / p99 ms, and the mean in the slowest 2%:")
    slowest = sorted(found, key=lambda r: r["queued"] - r["await"])[-max(1, len(found) // 50):]
    for label, a, b in PARTS:
        ms = sorted((r[b] - r[a]) * 1000 for r in found)
        pick = lambda q: ms[min(len(ms) - 1, int(q * len(ms)))]  # noqa: E731
        slow = statistics.mean((r[b] - r[a]) * 1000 for r in slowest)
        print(f"    {label:48s} {pick(0.5):6.2f} / {pick(0.9):6.2f} / {pick(0.99):6.2f}   slowest: {slow:6.2f}")
