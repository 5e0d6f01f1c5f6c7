"""The walks over all beads (cycles at load, the graph's waves): iterative, linear, and the same answers
as the recursive and quadratic walks they replaced (issue 32, item 1); and owns entries compared without
recursion."""

from __future__ import annotations

import sys

from hypothesis import given, settings, strategies as st

from anvilfs.beads import Bead, Status, find_cycles, owns
from anvilfs.beads.graph import waves


def recursive_cycles(beads: dict[str, Bead]) -> list[list[str]]:
    """find_cycles as it was before issue 32: one Python frame per link."""
    cycles, state = [], {}

    def visit(bead_id: str, path: list[str]) -> None:
        state[bead_id] = 1
        path.append(bead_id)
        for dep in beads[bead_id].depends_on:
            if dep not in beads:
                continue
            if state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path)
        path.pop()
        state[bead_id] = 2

    for bead_id in sorted(beads):
        if bead_id not in state:
            visit(bead_id, [])
    return cycles


def level_waves(beads: dict[str, Bead]):
    """waves as it was before issue 32: every level scans every bead left."""
    done = [b for b in beads.values() if b.status is Status.COMPLETED]
    wave_of = {b.id: 0 for b in done}
    remaining = {b.id: b for b in beads.values() if b.status is not Status.COMPLETED}
    result = []
    while remaining:
        level = len(result) + 1
        this = [b for b in remaining.values() if all(d in wave_of and wave_of[d] < level for d in b.depends_on)]
        if not this:
            break
        for b in this:
            wave_of[b.id] = level
            del remaining[b.id]
        result.append(sorted(this, key=lambda b: b.id))
    return result, sorted(done, key=lambda b: b.id), sorted(remaining.values(), key=lambda b: b.id)


def chain(n: int) -> dict[str, Bead]:
    """The issue's reproduction: each bead depends on the one made before, ids sorting from the deepest."""
    beads = {}
    for i in range(n):
        bead_id = f"c{9999 - i}-step-{i + 1:03d}"
        beads[bead_id] = Bead(id=bead_id, title="step", role="r",
                              depends_on=[f"c{9999 - i + 1}-step-{i:03d}"] if i else [])
    return beads


def ids(groups) -> list[list[str]]:
    return [[b.id for b in group] for group in groups]


NAMES = [f"b{i}" for i in range(8)]
graphs = st.dictionaries(
    st.sampled_from(NAMES),
    st.tuples(st.lists(st.sampled_from(NAMES + ["gone"]), max_size=4), st.sampled_from(list(Status))),
).map(lambda drawn: {i: Bead(id=i, title=i, role="r", depends_on=deps, status=status)
                     for i, (deps, status) in drawn.items()})


@settings(max_examples=500, deadline=None)
@given(graphs)
def test_the_iterative_walk_finds_the_cycles_the_recursive_one_found(beads):
    assert find_cycles(beads) == recursive_cycles(beads)


@settings(max_examples=500, deadline=None)
@given(graphs)
def test_the_linear_waves_are_the_waves_of_the_level_by_level_scan(beads):
    got, expected = waves(beads), level_waves(beads)
    assert [ids(got[0]), ids(got[1:])] == [ids(expected[0]), ids(expected[1:])]


def test_a_chain_deeper_than_the_recursion_limit_has_no_cycle_and_one_wave_per_link():
    n = sys.getrecursionlimit() + 100
    beads = chain(n)
    assert find_cycles(beads) == []
    levels, done, blocked = waves(beads)
    assert (len(levels), done, blocked) == (n, [], [])


def test_a_cycle_closing_a_long_chain_is_found_once_with_every_link():
    beads = chain(3000)
    first, last = "c9999-step-001", "c7000-step-3000"
    beads[first].depends_on = [last]
    (cycle,) = find_cycles(beads)
    assert len(cycle) == 3001 and cycle[0] == cycle[-1]
    assert [len(group) for group in waves(beads)] == [0, 0, 3000]


def recursive_overlap(a: list[str], b: list[str]) -> bool:
    """owns._overlap as it was before issue 32: both ways at each '**', exponential in their count."""
    if not a or not b:
        return all(s == "**" for s in a + b) or (not a and not b)
    if a[0] == "**":
        return recursive_overlap(a[1:], b) or recursive_overlap(a, b[1:])
    if b[0] == "**":
        return recursive_overlap(a, b[1:]) or recursive_overlap(a[1:], b)
    return owns._segment_overlap(a[0], b[0]) and recursive_overlap(a[1:], b[1:])


segments = st.lists(st.sampled_from(["**", "*", "a", "b", "a*", "*b", "?"]), max_size=6)


@settings(max_examples=1000, deadline=None)
@given(segments, segments)
def test_owns_overlap_without_recursion_answers_as_the_recursive_walk(a, b):
    assert owns._overlap(a, b) == recursive_overlap(a, b)


def test_owns_entries_full_of_double_stars_are_compared_at_once():
    """Before: each '**' tried both ways, recursively; 12 of them on each side took 36 s, 30 for ever."""
    many = "**/" * 30
    assert not owns.overlap(many + "a.md", many + "b.md")
    assert owns.overlap(many + "a.md", "x/" * 300 + "a.md")
