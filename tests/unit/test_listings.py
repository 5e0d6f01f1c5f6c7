"""A directory's listing records and Treaddir entries kept from one listing to the next (anvilfs/server/
listings.py): each listing is byte for byte the codec's, whatever changed, and only new nodes and nodes
whose record can move are encoded again."""

from __future__ import annotations

import random
import struct
from itertools import accumulate

import pytest

from anvilfs.ninep import Dialect, encode_stat
from anvilfs.server import attrs, listings
from anvilfs.server.listings import listing_entries, listing_records
from anvilfs.tree import Directory, TextFile


def fresh(nodes, dialect) -> list[bytes]:
    return [encode_stat(attrs.stat_of(node), dialect) for node in nodes]


def fresh_entry(node, at: int) -> bytes:
    """A Treaddir entry as 9P2000.L lays it out: qid[13] offset[8] type[1] name[s], the offset the next index."""
    qid, raw = attrs.qid_of(node), node.name.encode()
    return struct.pack("<BIQQBH", qid.type, qid.version, qid.path, at + 1, 4 if node.is_dir else 8, len(raw)) + raw


def moving_file(name: str, version: list[int]) -> TextFile:
    """A file whose record moves while the node stays (a drawn file: `list`, `graph`)."""
    node = TextFile(name, f"beads/{name}", lambda: "x" * version[0])
    node.stamp = lambda: (version[0], 1_796_000_000 + version[0])
    return node


def test_every_listing_is_the_codecs_whatever_changed_between_them() -> None:
    rng, version = random.Random(32), [1]
    directory = Directory("beads", "beads")
    nodes = [moving_file("list", version), moving_file("graph", version)]
    nodes += [Directory(f"b-{i:03d}", f"bead/{i}") for i in range(300)]
    dialects = [Dialect.P2000] * 6 + list(Dialect)
    for _ in range(200):
        nodes = list(nodes)  # each listing is a list of its own, never changed once handed out (Directory.children)
        how = rng.choice(["replace", "append", "remove", "move", "none"])
        if how == "replace":
            at = rng.randrange(2, len(nodes))
            name = nodes[at].name + rng.choice(["", "x"])  # a bead changed (its directory anew), or another bead
            nodes[at] = Directory(name, nodes[at].key)
        elif how == "append":
            nodes.append(Directory(f"n-{rng.randrange(10**6)}", f"bead/n{rng.randrange(10**6)}"))
        elif how == "remove" and len(nodes) > 3:
            del nodes[rng.randrange(2, len(nodes))]
        elif how == "move":
            version[0] += 1
        dialect = rng.choice(dialects)
        records, entries = listing_records(directory, nodes, dialect), listing_entries(directory, nodes)
        assert records.items == fresh(nodes, dialect), how
        assert entries.items == [fresh_entry(node, at) for at, node in enumerate(nodes)], how
        assert records.ends == list(accumulate(map(len, records.items))), how  # kept or made again
        assert entries.ends == list(accumulate(map(len, entries.items))), how


def test_a_bead_replaced_encodes_its_record_and_the_moving_files_only(monkeypatch) -> None:
    version = [1]
    directory = Directory("beads", "beads")
    nodes = [moving_file("list", version), moving_file("graph", version)]
    nodes += [Directory(f"b-{i:04d}", f"bead/{i}") for i in range(1000)]
    first, first_entries = listing_records(directory, nodes, Dialect.P2000), listing_entries(directory, nodes)
    held = list(first.items)
    encoded, entered = [], []
    real, real_dirent = listings.stat_record, listings.dirent
    monkeypatch.setattr(listings, "stat_record", lambda node, dialect: (encoded.append(node.name), real(node, dialect))[1])
    monkeypatch.setattr(listings, "dirent", lambda node, at: (entered.append(node.name), real_dirent(node, at))[1])
    nodes = list(nodes)
    nodes[500] = Directory("b-new", "bead/new")  # another bead at 500 (its record and entry differ)
    version[0] += 1
    again = listing_records(directory, nodes, Dialect.P2000)
    assert sorted(encoded) == ["b-new", "graph", "list"]
    assert again.items == fresh(nodes, Dialect.P2000)
    assert again.ends == list(accumulate(map(len, again.items))) != first.ends  # a record one byte shorter
    assert first.items == held  # the listing a fid holds is not changed by the next one
    assert listing_entries(directory, nodes).items == [fresh_entry(node, at) for at, node in enumerate(nodes)]
    assert sorted(entered) == ["b-new", "graph", "list"] and first_entries.items[500] != fresh_entry(nodes[500], 500)


def test_a_directory_whose_entries_are_dropped_drops_its_kept_listing_too() -> None:
    """tree/objects.py drops the files of all but the last bead directories walked into: the kept listing
    must not hold them."""
    made = Directory("b-1", "bead/1", lambda: [TextFile("status", "bead/1/status", lambda: "pending\n")])
    listing_records(made, made.children(), Dialect.P2000)
    assert made.listed is not None
    made.forget_entries()
    assert made.listed is None


@pytest.mark.parametrize("dialect", list(Dialect))
def test_a_shorter_listing_is_encoded_whole(dialect) -> None:
    directory = Directory("beads", "beads")
    nodes = [Directory(f"b-{i}", f"bead/{i}") for i in range(10)]
    listing_records(directory, nodes, dialect)
    assert listing_records(directory, nodes[3:], dialect).items == fresh(nodes[3:], dialect)


def test_the_nodes_not_the_same_are_found_by_identity_at_every_size() -> None:
    rng = random.Random(5)
    for _ in range(400):
        old = [Directory(f"d{i}", f"d/{i}") for i in range(rng.choice((0, 1, 63, 64, 65, 300, 2000)))]
        nodes = list(old) + [Directory("more", "more")] * rng.randrange(3)
        for at in rng.sample(range(len(old)), min(len(old), rng.choice((0, 1, 2, 5, 200)))):
            nodes[at] = Directory(old[at].name, old[at].key)  # another node, named the same
        stop = min(len(nodes), len(old))
        assert listings._not_same(nodes, old, 0, stop) == [at for at in range(stop) if nodes[at] is not old[at]]


def _subclasses(cls: type) -> list[type]:
    return [cls] + [sub for direct in cls.__subclasses__() for sub in _subclasses(direct)]


def test_no_node_compares_equal_to_another_node_as_listings_assume() -> None:
    """_not_same compares lists of nodes with ==, which is identity only while no node class has an __eq__."""
    import anvilfs.app  # noqa: F401, PLC0415 - every kind of node the server makes, defined
    from anvilfs.tree import Node  # noqa: PLC0415

    kinds = _subclasses(Node)
    assert len(kinds) > 5
    assert [kind for kind in kinds if kind.__eq__ is not object.__eq__] == []
