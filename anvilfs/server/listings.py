"""A 9P2000 directory read (Tread of a directory): its entries' stat records, each directory's last kept.

`ls beads/` with 10,000 beads sends 10,000 records. Taken through each node at every listing (its record
is kept with it, attrs.stat_record, but each had to be looked at) they cost the loop 2-4 ms a listing, a
third of its time in benchmarks/reads.py right after changes (issue 32, item 6). So a directory keeps its
last listing's nodes and records (Directory.listed; one listing a directory, dropped with its entries),
and the next listing compares its nodes with those by identity, in C, and encodes again only the records
of nodes new at their place, and of the few whose record can move while the node stays (a file with a
stamp, such as `list` or `graph`; attrs.stat_record says whether a record is fixed). A bead's change makes
its directory anew (tree/objects.py), so a claim encodes one record again, not 10,000.

The records are taken at the listing's first read (offset 0): a client reading a big directory in several
reads sees each entry as it was then, as it already saw which entries there were.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, compress
from operator import is_not

from ..ninep import Dialect
from ..tree import Directory, Node
from .attrs import check_fits, stat_record

_RUN = 512  # records taken at a time by pack_records: more than a 64 KiB read of bead directories holds


def listing_records(directory: Directory, nodes: list[Node], dialect: Dialect) -> list[bytes]:
    """Each of `nodes`' stat record (the listing `directory` gave now), the last listing's kept where they hold.
    A listing is never changed once handed out (Directory.children makes a list each time): the last one's
    nodes are what it listed."""
    kept = directory.listed
    if kept is None or kept[0] is not dialect or len(nodes) < len(kept[1]):
        records = [kept[4] if (kept := node.record) is not None and kept[5] and kept[0] is dialect
                   else stat_record(node, dialect) for node in nodes]  # a fixed record without a call
        loose = {at for at, node in enumerate(nodes) if not node.record[5]}
    else:
        _, old_nodes, old_records, loose = kept
        records = old_records + [b""] * (len(nodes) - len(old_nodes))  # a copy: a fid may hold the last one
        loose = set(loose)
        new = list(compress(range(len(old_nodes)), map(is_not, nodes, old_nodes)))  # stops at the shorter
        new += range(len(old_nodes), len(nodes))  # added at the end (tree/objects.py adds objects there)
        for at in new:
            records[at] = stat_record(nodes[at], dialect)
            (loose.discard if nodes[at].record[5] else loose.add)(at)
        for at in loose.difference(new):
            records[at] = stat_record(nodes[at], dialect)
    directory.listed = (dialect, nodes, records, frozenset(loose))
    return records


def pack_records(records: list[bytes], start: int, count: int) -> tuple[bytes, int]:
    """The whole records from `start` that fit in `count` bytes, and the index to go on from; refused (EINVAL)
    if not even the next one fits (an empty answer would read as the directory's end)."""
    parts: list[bytes] = []
    index, end, room = start, len(records), count
    while index < end:
        run = records[index:index + _RUN]
        sizes = list(accumulate(map(len, run)))
        fit = bisect_right(sizes, room)
        parts += run[:fit]
        index += fit
        if fit < len(run):
            check_fits(parts, len(run[fit]), count)
            break
        room -= sizes[-1]
    return b"".join(parts), index
