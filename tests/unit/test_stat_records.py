"""A directory's stat records, laid out by attrs.py for speed (issue 32), are byte for byte the codec's."""

from __future__ import annotations

import pytest

from anvilfs.ninep import Dialect, encode_stat
from anvilfs.server import attrs
from anvilfs.tree import Directory, TextFile


def nodes():
    text = TextFile("status", "session/s1/status", lambda: "idle\n")
    text.stamp = lambda: (0xDEADBEEF, 1_796_000_000)
    return [Directory("beads", "beads"), Directory("tâche-ü-001", "bead/tâche-ü-001"), text,
            TextFile("", "empty-name", lambda: ""), TextFile("big", "big", lambda: "x" * 70_000)]


@pytest.mark.parametrize("dialect", list(Dialect))
def test_a_record_is_what_the_codec_encodes_for_the_same_stat(dialect):
    for node in nodes():
        assert attrs.stat_record(node, dialect) == encode_stat(attrs.stat_of(node), dialect), node
        node.record = None
        assert attrs.pack_stats([node, node], 0, 1 << 20, dialect)[0] == encode_stat(attrs.stat_of(node), dialect) * 2
