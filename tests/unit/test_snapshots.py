"""Snapshots of computed files: shared by content, freed with their last reader, budgeted per connection."""

from __future__ import annotations

import errno
import weakref

import pytest

from anvilfs.tree import SnapshotBudget
from anvilfs.tree.snapshots import SnapshotLimit, SnapshotSource


def test_the_same_content_gives_the_same_snapshot_and_the_file_does_not_keep_it_alive():
    text = ["a" * 1000]
    source = SnapshotSource(lambda: text[0])
    first = source.take()
    assert source.take() is first
    text[0] = "b" * 1000
    second = source.take()
    assert second is not first and second.data == b"b" * 1000
    text[0] = "a" * 1000
    assert source.take() is first  # any snapshot still held is shared, not only the latest
    gone = weakref.ref(first)
    del first
    assert gone() is None



def test_a_snapshot_nobody_holds_leaves_no_entry_and_a_dead_one_does_not_remove_its_successor():
    text = ["a"]
    source = SnapshotSource(lambda: text[0])
    first = source.take()
    del first  # its entry goes with it
    assert not source._live
    held = source.take()
    text[0] = "b"
    other = source.take()
    del other
    text[0] = "a"
    assert list(source._live) == [b"a"] and source.take() is held


def test_a_budget_counts_each_distinct_snapshot_once():
    source_text = ["x" * 600]
    source = SnapshotSource(lambda: source_text[0])
    budget = SnapshotBudget(1000)
    a = source.take()
    budget.swap(None, a)
    budget.swap(None, a)  # a second open file on the same content costs nothing more
    assert (budget.held, budget.held_bytes) == (1, 600)
    source_text[0] = "y" * 600
    b = source.take()
    with pytest.raises(SnapshotLimit, match="at most 1000 bytes of snapshots per connection") as refused:
        budget.swap(None, b)
    assert refused.value.errno == errno.ENOMEM
    assert (budget.held, budget.held_bytes) == (1, 600)  # refused: nothing changed
    budget.release(a)
    budget.swap(a, b)  # the last holder of a moves to b: fits
    assert (budget.held, budget.held_bytes) == (1, 600)
    budget.release(b)
    assert (budget.held, budget.held_bytes) == (0, 0)
