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


def test_a_readdir_entry_is_laid_out_as_9p2000_L_says_and_follows_its_qid():
    """qid[13] offset[8] type[1] name[s], each offset the next entry's index (the layout before issue 32's cache)."""
    import struct

    listing = nodes()[:3]
    moving = listing[2]

    def expected(start: int) -> bytes:
        out = b""
        for index, node in enumerate(listing[start:], start):
            qid = attrs.qid_of(node)
            raw = node.name.encode()
            out += struct.pack("<BIQQB", qid.type, qid.version, qid.path, index + 1, 4 if node.is_dir else 8)
            out += struct.pack("<H", len(raw)) + raw
        return out

    assert attrs.pack_dirents(listing, 0, 1 << 16) == expected(0)
    assert attrs.pack_dirents(listing, 1, 1 << 16) == expected(1)
    moving.stamp = lambda: (7, 1_796_000_001)  # its version moved: its entry with it
    assert attrs.pack_dirents(listing, 0, 1 << 16) == expected(0)
