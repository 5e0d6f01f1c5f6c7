"""Stamps (qid.version, mtime) of the files drawn from the domain's state: they move when a file's text does,
and only then, so clients that cache by either (v9fs cache=loose, fscache, 9pfuse) re-read it then and only then.

A file's version is a checksum of its text: a function of what it shows, the same after a server restart.
What it costs is kept off the stat: a cheap `count` (a version counter of the domain the text comes
from) says whether the text may have changed, and it is rendered and summed again only when that has
moved. A session's files have their own stamps (Session.stamp): their text is costly to render.
"""

from __future__ import annotations

import calendar
import datetime
import re
import time
import zlib
from collections.abc import Callable

from ..journal import Journal
from ..tree import Node, TextFile
from ..tree.snapshots import SnapshotSource

Stamp = tuple[int, int]
_NEVER = object()  # the count before a first look: unequal to any


def now() -> int:
    return int(time.time())


_TIMESTAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z")


def epoch(when: str) -> int:
    """A domain timestamp ("2026-12-04T13:18:53Z", journal.timestamp) as epoch seconds; 0 if it is not one
    (a file written by hand may have none).

    The timestamps the server writes take the fast way, fields by a pattern and checked by datetime; the
    rest (a leap second, single digits by hand) take strptime's, which decides as before. strptime for
    all cost 5 us a call (2.5 this way), and its first call imports its module, in the loop: a third of
    the first `ls /` after a start, when `events`' stamp first looked (issue 32, item 6)."""
    match = _TIMESTAMP.match(when)
    if match is not None:
        try:
            return calendar.timegm(datetime.datetime(*map(int, match.groups())).timetuple())
        except ValueError:
            pass
    try:
        return calendar.timegm(time.strptime(when[:20], "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return 0


class Follows:
    """The stamp of a file whose text is `render()`: version its checksum, mtime `when()` at the look that
    found the checksum changed (the domain's time of its last change, else the look's own second).

    `count()` must move with every change that could change the text; the text is summed again only
    when it has, so a stat of an unchanged file costs a call and a compare. For the same reason the
    text is rendered once per move of `count()`, not once per look: `text` is what the file's stat,
    length and reads all use (a graph of 10,000 beads is rendered once per change, not three times a
    read, issue 32).
    """

    __slots__ = ("count", "render", "when", "_seen", "_sum", "_stamp", "_text", "_text_seen")

    def __init__(self, count: Callable[[], object], render: Callable[[], str], when: Callable[[], int] = now):
        self.count, self.render, self.when = count, render, when
        self._seen: object = _NEVER
        self._sum: int | None = None
        self._stamp: Stamp = (0, 0)
        self._text, self._text_seen = "", _NEVER

    def text(self) -> str:
        """The file's text, rendered again only once `count()` has moved."""
        seen = self.count()
        if seen != self._text_seen:
            self._text, self._text_seen = self.render(), seen
        return self._text

    def __call__(self) -> Stamp:
        seen = self.count()
        if seen != self._seen:
            self._seen = seen
            total = zlib.crc32(self.text().encode("utf-8", "surrogatepass"))
            if total != self._sum:
                self._sum, self._stamp = total, (total, self.when())
        return self._stamp


class Stamps:
    """The stamps of a builder's files, kept by directory and node key: a directory built again (a bead's, at
    each change of the bead) finds its files' stamps as they were, so an unchanged file keeps its mtime.

    `forget(directory_key)` lets a directory's stamps go once its files were dropped (tree/objects.py keeps
    those of the directories walked into last): made again, they stamp anew, the same version (the text's
    checksum), the mtime the domain's last change. Kept for ever, they held every bead file's render and
    stamp functions ever made, 120,000 of them once a client had walked 10,000 beads."""

    __slots__ = ("_by_dir",)

    def __init__(self) -> None:
        self._by_dir: dict[str, dict[str, Follows]] = {}

    def follow(self, node: Node, count: Callable[[], object], when: Callable[[], int] = now) -> Node:
        """Give `node` (a file with a `render`) a stamp that follows its text; `count` as Follows's."""
        kept = self._by_dir.setdefault(node.key.rpartition("/")[0], {})
        stamp = kept.get(node.key)
        if stamp is None:
            stamp = kept[node.key] = Follows(count, node.render, when)
        return _stamped(node, stamp)

    def forget(self, directory_key: str) -> None:
        self._by_dir.pop(directory_key, None)


def follows(node: Node, count: Callable[[], object], when: Callable[[], int] = now) -> Node:
    """`node`'s stamp follows its text (a node built once: its stamp lives with it)."""
    return _stamped(node, Follows(count, node.render, when))


def _stamped(node: Node, stamp: Follows) -> Node:
    """A TextFile is also sized by the stamp's count (TextFile.sized_by): a stat of it renders nothing either;
    and its reads take the stamp's text, rendered once per change."""
    node.stamp = stamp
    if isinstance(node, TextFile) and node.sized_by is None:
        node.sized_by = stamp.count
        node.render = stamp.text
        node.snapshots = SnapshotSource(stamp.text)
    return node


class JournalStamp:
    """`events`' and `errors`' stamp: each line appended moves them; version the count of lines, mtime the last one's.

    Their text is every line kept, which only grows at its end (the oldest dropped past the ring's
    size): its count of lines so far is its version, and what a line says first is when it came.
    """

    __slots__ = ("journal", "_count", "_stamp")

    def __init__(self, journal: Journal):
        self.journal, self._count, self._stamp = journal, 0, (0, now())

    def __call__(self) -> Stamp:
        count = self.journal.next_seq
        if count != self._count:
            lines, _ = self.journal.since(count - 1)
            self._count, self._stamp = count, (count, epoch(lines[0]) if lines else now())
        return self._stamp
