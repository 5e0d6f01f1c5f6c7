"""The events/errors journal: since() gives the lines from a number on, and how many were dropped before them."""

from __future__ import annotations

from anvilfs.journal import Journal


def _texts(lines: list[str]) -> list[str]:
    return [line.split(" ", 1)[1] for line in lines]  # without the time stamp


def test_since_gives_the_lines_from_a_number_on_and_what_the_ring_dropped():
    journal = Journal(keep=3)
    assert journal.since(0) == ([], 0)
    for n in range(5):
        journal.append(f"line {n}")
    lines, missed = journal.since(0)  # lines 0 and 1 are gone
    assert (_texts(lines), missed) == (["line 2\n", "line 3\n", "line 4\n"], 2)
    assert (_texts(journal.since(3)[0]), journal.since(3)[1]) == (["line 3\n", "line 4\n"], 0)
    assert journal.since(5) == ([], 0) and journal.since(9) == ([], 0)  # at the end, or past it
