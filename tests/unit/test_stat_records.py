"""A directory's stat records, laid out by attrs.py for speed (issue 32), are byte for byte the codec's."""

from __future__ import annotations

import pytest

from anvilfs.ninep import Dialect, RequestError, encode_stat
from anvilfs.server import attrs
from anvilfs.server.listings import listing_entries, listing_records, pack_records
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
        listed = listing_records(Directory("d", "d"), [node, node], dialect)
        assert pack_records(listed, 0, 1 << 20)[0] == encode_stat(attrs.stat_of(node), dialect) * 2


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

    directory = Directory("d", "d")

    def readdir(start: int) -> bytes:  # a listing from the directory, as a Treaddir at `start` packs it
        return pack_records(listing_entries(directory, list(listing)), start, 1 << 16)[0]

    assert readdir(0) == expected(0)
    assert readdir(1) == expected(1)
    moving.stamp = lambda: (7, 1_796_000_001)  # its version moved: its entry with it, the listing kept or not
    assert readdir(0) == expected(0)


@pytest.mark.parametrize("dialect", list(Dialect))
def test_a_directory_read_takes_the_whole_records_that_fit_from_its_entry_on_and_refuses_a_count_too_small(dialect):
    """pack_records takes a run of entries at a time (faster than one by one): what it answers is still each read's
    whole records from `start` while they fit, the index to go on from, and an error for a count smaller than
    the next record, over listings longer than a run and every count around the records' edges."""
    listing = [Directory(f"bead-{i:04d}{'x' * (i % 7)}", f"bead/{i}") for i in range(1200)] + nodes()
    records = [encode_stat(attrs.stat_of(node), dialect) for node in listing]
    listed = listing_records(Directory("beads", "beads"), listing, dialect)
    assert listed.items == records
    ends = [0]
    for record in records:
        ends.append(ends[-1] + len(record))
    for start in (0, 1, 127, 128, 129, 299, 300, len(listing) - 1):
        edges = [sum(len(r) for r in records[start:start + n]) for n in (1, 2, 128, 129, 250, 511, 512, 513)]
        for count in sorted({c + d for c in edges for d in (-1, 0, 1)} | {1 << 20}):
            fit = start
            while fit < len(records) and ends[fit + 1] - ends[start] <= count:
                fit += 1
            if fit == start:
                with pytest.raises(RequestError, match="too small for the next entry"):
                    pack_records(listed, start, count)
                continue
            assert pack_records(listed, start, count) == (b"".join(records[start:fit]), fit), (start, count)
    assert pack_records(listed, len(listing), 100) == (b"", len(listing))
