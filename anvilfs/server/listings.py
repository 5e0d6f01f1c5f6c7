"""A directory read (a 9P2000 Tread, a 9P2000.L Treaddir): its entries' encodings, each directory's last kept.

`ls beads/` with 10,000 beads sends 10,000 records. Taken through each node at every listing (its record
is kept with it, attrs.stat_record, but each had to be looked at) they cost the loop 2-4 ms a listing, a
third of its time in benchmarks/reads.py right after changes (issue 32, item 6). So a directory keeps its
last listing's nodes and records (Directory.listed; one listing a directory and kind of encoding,
dropped with its entries: a directory replaced drops them at once, tree/objects.py), and the next
listing compares its nodes with those by identity, in C (_not_same), and encodes again only the
records of nodes new at their place, and of the few whose record can move while the node stays (a
file with a stamp, such as `list` or `graph`; attrs.stat_record says whether a record is fixed). A
bead's change makes its directory anew (tree/objects.py), so a claim encodes one record again, not
10,000.

The records are taken at the listing's first read (offset 0): a client reading a big directory in several
reads sees each entry as it was then, as it already saw which entries there were. A 9P2000.L Treaddir's
entries (Linux v9fs: `ls` on a mount) are kept the same way, each with its offset (the next index).
Where each encoding ends in the listing's bytes is kept with them (Listing.ends): a read is a bisect.
"""

from __future__ import annotations

import errno
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from ..ninep import Dialect, RequestError
from ..tree import Directory, Node
from .attrs import dirent, stat_record

_SCAN = 64  # _not_same: nodes compared one by one below this
_ENTRIES = "Treaddir"  # the key of a directory's kept Treaddir entries (its stat records are kept by dialect)


@dataclass(frozen=True, slots=True)
class Listing:
    """A listing's encoded entries (stat records, or Treaddir entries) and where each ends in their bytes."""

    items: list[bytes]
    ends: list[int]  # ends[i]: the bytes of items[:i + 1]


def listing_records(directory: Directory, nodes: list[Node], dialect: Dialect) -> Listing:
    """Each of `nodes`' stat record (the listing `directory` gave now), the last listing's kept where they hold."""
    def record(node: Node, at: int) -> bytes:  # a fixed record without a call (attrs.stat_record keeps them)
        kept = node.record
        return kept[4] if kept is not None and kept[5] and kept[0] is dialect else stat_record(node, dialect)
    return _kept(directory, nodes, dialect, record, lambda node: node.record[5])


def listing_entries(directory: Directory, nodes: list[Node]) -> Listing:
    """Each of `nodes`' 9P2000.L Treaddir entry (its offset the next one's index), kept in the same way."""
    return _kept(directory, nodes, _ENTRIES, dirent, lambda node: node.entry[2])


def _kept(directory: Directory, nodes: list[Node], key: object, encode: Callable[[Node, int], bytes],
          fixed: Callable[[Node], bool]) -> Listing:
    """encode(node, its index) for each of `nodes`, the last listing's under `key` kept where they hold: for a
    node that is the last listing's at its place and whose encoding is `fixed` (checked once encoded). The
    ends are the last listing's too while every item kept its length (a claim changes no record's length).
    A listing is never changed once handed out (Directory.children makes a list each time): the last one's
    nodes are what it listed."""
    listed = directory.listed if directory.listed is not None else {}
    kept = listed.get(key)
    if kept is None or len(nodes) < len(kept[0]):
        items = [encode(node, at) for at, node in enumerate(nodes)]
        loose = {at for at, node in enumerate(nodes) if not fixed(node)}
        resized = True
    else:
        old_nodes, old, loose = kept
        items = old.items + [b""] * (len(nodes) - len(old_nodes))  # a copy: a fid may hold the last one
        loose, resized = set(loose), len(nodes) > len(old_nodes)
        new = _not_same(nodes, old_nodes, 0, min(len(nodes), len(old_nodes)))
        new += range(len(old_nodes), len(nodes))  # added at the end (tree/objects.py adds objects there)
        for at in new:
            items[at] = encode(nodes[at], at)
            (loose.discard if fixed(nodes[at]) else loose.add)(at)
        for at in loose.difference(new):
            items[at] = encode(nodes[at], at)
        resized = resized or any(len(items[at]) != len(old.items[at]) for at in loose.union(new) if at < len(old_nodes))
    listing = Listing(items, list(accumulate(map(len, items))) if resized else kept[1].ends)
    directory.listed = listed | {key: (nodes, listing, frozenset(loose))}
    return listing


def _not_same(nodes: list[Node], old: list[Node], lo: int, hi: int) -> list[int]:
    """The places in [lo, hi) where `nodes` holds another node than `old`. A node has no __eq__ (a test
    says so), so list equality is identity, compared in C: halving the lists that differ finds a claim's
    one new bead among 10,000 in about 17 compares of slices, where a pass calling is_not on each took
    0.4 ms a listing (issue 32). Slices of _SCAN nodes or fewer are looked at node by node."""
    if (nodes == old if lo == 0 and hi == len(nodes) == len(old) else nodes[lo:hi] == old[lo:hi]):
        return []
    if hi - lo <= _SCAN:
        return [at for at in range(lo, hi) if nodes[at] is not old[at]]
    mid = (lo + hi) // 2
    return _not_same(nodes, old, lo, mid) + _not_same(nodes, old, mid, hi)


def pack_records(listing: Listing, start: int, count: int) -> tuple[bytes, int]:
    """The whole records (or Treaddir entries) from `start` that fit in `count` bytes, and the index to go on
    from; refused (EINVAL) if not even the next one fits (an empty answer would read as the directory's end)."""
    items, ends = listing.items, listing.ends
    if start >= len(items):
        return b"", start
    stop = bisect_right(ends, (ends[start - 1] if start else 0) + count, lo=start)
    if stop == start:  # an empty answer would read as the end of the directory
        raise RequestError(f"directory read of {count} bytes is too small for the next entry: "
                           f"read at least {len(items[start])} bytes", errno.EINVAL)
    return b"".join(items[start:stop]), stop
