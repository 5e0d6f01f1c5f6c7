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


def waves(beads: dict[str, Bead]) -> tuple[list[list[Bead]], list[Bead], list[Bead]]:
    """(waves of open beads, completed beads, blocked beads)."""
    done = [b for b in beads.values() if b.status is Status.COMPLETED]
    wave_of: dict[str, int] = {b.id: 0 for b in done}
    remaining = {b.id: b for b in beads.values() if b.status is not Status.COMPLETED}
    result: list[list[Bead]] = []
    while remaining:
        level = len(result) + 1
        this = [b for b in remaining.values()
                if all(d in wave_of and wave_of[d] < level for d in b.depends_on)]
        if not this:
            break  # what is left waits on a cycle or a bead that does not exist
        for b in this:
            wave_of[b.id] = level
            del remaining[b.id]
        result.append(sorted(this, key=lambda b: b.id))
    return result, sorted(done, key=lambda b: b.id), sorted(remaining.values(), key=lambda b: b.id)


def render(beads: dict[str, Bead]) -> str:
    levels, done, blocked = waves(beads)
    lines = []
    for number, level in enumerate(levels, 1):
        lines.append(f"wave {number}")
        lines += [_line(b, beads) for b in level]
    if done:
        lines.append("done")
        lines += [_line(b, beads) for b in done]
    if blocked:
        lines.append("blocked (a dependency cycle, or a dependency that does not exist)")
        lines += [_line(b, beads) for b in blocked]
    return "".join(line + "\n" for line in lines)


def _line(bead: Bead, beads: dict[str, Bead]) -> str:
    open_deps = [d for d in bead.depends_on if d not in beads or beads[d].status is not Status.COMPLETED]
    arrow = f"  <- {' '.join(open_deps)}" if open_deps and bead.status is not Status.COMPLETED else ""
    return f"  {bead.id} {bead.status.value}  {bead.title}{arrow}"
