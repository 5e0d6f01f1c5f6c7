"""`beads/graph`: the beads and their dependencies as text, in waves that can run in parallel.

Wave 1 holds the open beads with no open dependency; wave N those whose
open dependencies are all in earlier waves. Completed beads are listed
last, as done; beads in a dependency cycle, or waiting on a bead that does
not exist, as blocked.

    wave 1
      research-auth-001 in_progress  Research auth system
    wave 2
      impl-oauth-002 pending  Implement OAuth  <- research-auth-001
    done
      setup-repo-000 completed  Set up the repository
"""

from __future__ import annotations

from .model import Bead
from .states import Status

BLOCKED_HEADING = "blocked (a dependency cycle, or a dependency that does not exist)"


def waves(beads: dict[str, Bead]) -> tuple[list[list[Bead]], list[Bead], list[Bead]]:
    """(waves of open beads, completed beads, blocked beads).

    A bead's wave is one past the latest wave of its open dependencies (a completed one counts as
    wave 0). Worked out in one pass in dependency order (Kahn's), linear in beads and links: a chain
    of thousands is read at every change of the board (issue 32)."""
    done = [b for b in beads.values() if b.status is Status.COMPLETED]
    wave_of: dict[str, int] = {b.id: 0 for b in done}
    open_beads = {b.id: b for b in beads.values() if b.status is not Status.COMPLETED}
    waiting: dict[str, int] = {}  # an open bead -> how many of its dependencies have no wave yet
    dependents: dict[str, list[str]] = {}  # a bead -> the open beads that depend on it
    level: dict[str, int] = {}  # an open bead -> the latest wave among its dependencies that have one
    for bead in open_beads.values():
        deps = set(bead.depends_on)
        waiting[bead.id] = len(deps)
        level[bead.id] = 0
        for dep in deps:
            dependents.setdefault(dep, []).append(bead.id)
    for bead_id in open_beads:
        if not waiting[bead_id]:  # no dependencies at all
            wave_of[bead_id] = 1
    placed = list(wave_of)
    for bead_id in placed:  # grows as beads get their wave: a queue in dependency order
        for dependent in dependents.get(bead_id, ()):
            level[dependent] = max(level[dependent], wave_of[bead_id])
            waiting[dependent] -= 1
            if not waiting[dependent]:
                wave_of[dependent] = level[dependent] + 1
                placed.append(dependent)
    result: list[list[Bead]] = [[] for _ in range(max((wave_of[i] for i in open_beads if i in wave_of), default=0))]
    for bead_id, bead in open_beads.items():
        if bead_id in wave_of:
            result[wave_of[bead_id] - 1].append(bead)
    blocked = [b for i, b in open_beads.items() if i not in wave_of]
    return ([sorted(w, key=lambda b: b.id) for w in result], sorted(done, key=lambda b: b.id),
            sorted(blocked, key=lambda b: b.id))


def render(beads: dict[str, Bead]) -> str:
    """The whole text at once (view.py keeps it a change at a time, the same text)."""
    levels, done, blocked = waves(beads)
    lines = []
    for number, level in enumerate(levels, 1):
        lines.append(f"wave {number}\n")
        lines += [graph_line(b, beads) for b in level]
    if done:
        lines.append("done\n")
        lines += [graph_line(b, beads) for b in done]
    if blocked:
        lines.append(BLOCKED_HEADING + "\n")
        lines += [graph_line(b, beads) for b in blocked]
    return "".join(lines)


def graph_line(bead: Bead, beads: dict[str, Bead]) -> str:
    """A bead's line: its id, status and title, and the dependencies it still waits for."""
    open_deps = [d for d in bead.depends_on if d not in beads or beads[d].status is not Status.COMPLETED]
    arrow = f"  <- {' '.join(open_deps)}" if open_deps and bead.status is not Status.COMPLETED else ""
    return f"  {bead.id} {bead.status.value}  {bead.title}{arrow}\n"
