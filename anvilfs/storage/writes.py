"""The save queue's writes: what is rendered for the disk, and how a batch of it is written, in order.

A batch's writes go stage by stage; in a stage the appends first, then
the replaces, prepared (each in a temporary file, fsynced), renamed, and
made durable with one fsync per directory. A stage that fails holds back
every later one, and a batch that fails holds back every later batch.

Lazy appends (a running turn's transcript: nobody's write waits on it) are
written without an fsync of their own. They are made durable before the
next replace of any stage is renamed into place (so a .toml never says
more than the transcript on disk has), by a ``flush`` that picks them, or
within ``LAZY_SYNC`` seconds. An fsync the disk refuses writes them again
from where they began, from what ``Unsynced`` keeps of them until then.
"""

from __future__ import annotations

import errno
import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import trio

from .private import PrivateDir
from .redolog import Op, RedoLog

LAZY_SYNC = 1.0  # s: the longest a lazy append waits for its fsync


@dataclass(frozen=True, slots=True)
class Replace:
    """A whole file's new content."""

    dir: PrivateDir
    name: str
    data: bytes


class Commit:
    """Done once the writes sealed with it are on disk, or failed with the disk's error (`error`)."""

    __slots__ = ("done", "error", "_then")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.error: OSError | None = None
        self._then: list[Callable[[OSError | None], None]] = []

    def then(self, fn: Callable[[OSError | None], None]) -> None:
        """fn(error or None) in the loop when it is settled, before any waiter wakes."""
        self._then.append(fn)

    async def wait(self) -> None:
        """Until it is settled; raises the disk's OSError if it failed."""
        await self.done.wait()
        if self.error is not None:
            raise self.error

    def _settle(self, error: OSError | None) -> None:
        self.error = error
        for fn in self._then:
            fn(error)
        self.done.set()


@dataclass(slots=True)
class Pending:
    stage: int
    render: Callable[[], Replace] | None = None  # a replace; else an append to dir/name
    dir: PrivateDir | None = None
    name: str = ""
    parts: list[bytes] = field(default_factory=list)
    lazy: bool = False  # an append that waits for the next fsync instead of making its own


@dataclass(slots=True)
class Write:
    """A rendered write, ready for the disk; `pending` goes back in the queue if the disk refuses it."""

    key: Hashable
    pending: Pending
    dir: PrivateDir
    name: str
    data: bytes
    append: bool


@dataclass(slots=True)
class Batch:
    writes: list[Write]  # sorted by stage
    commits: list[Commit] = field(default_factory=list)  # settled when the batch is written (or fails)
    done: bool = False
    failed: list[tuple[Write, OSError]] = field(default_factory=list)
    held: list[Write] = field(default_factory=list)  # a later stage than one that failed: not tried
    unapplied: list[tuple[Write, OSError]] = field(default_factory=list)  # in the redo log, not in its file


@dataclass(slots=True)
class _Tail:
    """Appends to one file written but not yet fsynced: where they began, and what they were."""

    key: Hashable
    dir: PrivateDir
    name: str
    start: int
    parts: list[bytes] = field(default_factory=list)
    rewrite: bool = False  # an fsync of it failed: write it again rather than trust the next fsync


class Unsynced:
    """The lazy appends not yet on disk, by file; used under the queue's lock only."""

    def __init__(self) -> None:
        self._tails: dict[tuple[int, str], _Tail] = {}

    def __bool__(self) -> bool:
        return bool(self._tails)

    def note(self, key: Hashable, dir: PrivateDir, name: str, start: int, data: bytes) -> None:
        tail = self._tails.setdefault((id(dir), name), _Tail(key, dir, name, start))
        tail.parts.append(data)

    def forget(self, only: Callable[[Hashable], bool]) -> None:
        for where in [w for w, tail in self._tails.items() if only(tail.key)]:
            del self._tails[where]

    def synced(self, dir: PrivateDir, name: str) -> None:
        """An fsync of the file (a durable append to it) covered its lazy appends too."""
        self._tails.pop((id(dir), name), None)

    def ops(self, only: Callable[[Hashable], bool] | None = None) -> list[tuple[tuple[int, str], Op]]:
        """The tails (all, or those whose key `only` picks) as writes of a redo log's record."""
        return [(where, Op("a", tail.dir, tail.name, b"".join(tail.parts), tail.start))
                for where, tail in self._tails.items() if only is None or only(tail.key)]

    def logged(self, ops: list[tuple[tuple[int, str], Op]], redo: RedoLog) -> None:
        """The tails of `ops` are in the redo log: durable, and a checkpoint's to fsync in place. One whose
        fsync failed before is written again (the kernel may have dropped its pages)."""
        for where, op in ops:
            tail = self._tails.pop(where)
            error = None
            if tail.rewrite:
                try:
                    op.do()
                except OSError as exc:
                    error = exc
            redo.applied(op, error)

    def sync(self, only: Callable[[Hashable], bool] | None = None,
             redo: RedoLog | None = None) -> list[tuple[Hashable, OSError]]:
        """Make the tails durable (all, or those whose key `only` picks): in one record of `redo`, or
        else by an fsync each; what fails stays, with its error."""
        if redo is not None:
            return self._log(only, redo)
        failed = []
        for where, tail in list(self._tails.items()):
            if only is not None and not only(tail.key):
                continue
            try:
                tail.dir.sync_tail(tail.name, tail.start, b"".join(tail.parts), rewrite=tail.rewrite)
            except OSError as exc:
                tail.rewrite = True
                failed.append((tail.key, exc))
                continue
            del self._tails[where]
        return failed

    def _log(self, only, redo: RedoLog) -> list[tuple[Hashable, OSError]]:
        ops = self.ops(only)
        if not ops:
            return []
        try:
            redo.log([op for _, op in ops])
        except OSError as exc:
            for where, _ in ops:
                self._tails[where].rewrite = True
            return [(self._tails[where].key, exc) for where, _ in ops]
        self.logged(ops, redo)
        return []


def virtual_time() -> bool:
    """Under trio's MockClock (tests with autojump_clock), time jumps whenever every task waits, and it
    would jump past every deadline while a thread writes; there the writes are done in the loop."""
    return type(trio.lowlevel.current_clock()).__name__ == "MockClock"


def not_written() -> OSError:
    return OSError(errno.EIO, "not written: an earlier write to the state directory failed")


def write_batches(batches: list[Batch], unsynced: Unsynced, redo: RedoLog | None = None) -> bool:
    """Write batches in order (the caller holds the lock) until one fails; False if one did."""
    for i, batch in enumerate(batches):
        write_batch(batch, unsynced, redo)
        if batch.failed or batch.held:  # a later batch never lands before an earlier one that failed
            for later in batches[i + 1:]:
                if not later.done:
                    later.done = True
                    later.held = list(later.writes)
            return False
    return True


def write_batch(batch: Batch, unsynced: Unsynced, redo: RedoLog | None = None) -> None:
    """Do a batch's writes, stage by stage (the caller holds the lock); failures are noted in the batch.
    With a redo log, a batch with anything but lazy appends goes in one record of it instead."""
    if batch.done:
        return
    batch.done = True
    if redo is not None and not all(w.append and w.pending.lazy for w in batch.writes):
        _write_logged(batch, unsynced, redo)
        return
    stages = [list(writes) for _, writes in itertools.groupby(batch.writes, key=lambda w: w.pending.stage)]
    for i, writes in enumerate(stages):
        if not _write_stage(writes, batch.failed, unsynced):
            # a later stage never lands before an earlier one that failed
            batch.held.extend(w for later in stages[i + 1:] for w in later)
            return


def _write_stage(writes: list[Write], failed: list, unsynced: Unsynced) -> bool:
    """One stage: appends, then replaces prepared, renamed, and made durable with one fsync per directory."""
    ok, prepared = True, []
    for w in writes:
        try:
            if not w.append:
                prepared.append((w, w.dir.prepare(w.name, w.data)))
            elif w.pending.lazy:
                unsynced.note(w.key, w.dir, w.name, w.dir.append(w.name, w.data, sync=False), w.data)
            else:
                w.dir.append(w.name, w.data)
                unsynced.synced(w.dir, w.name)
        except OSError as exc:
            failed.append((w, exc))
            ok = False
    if prepared and (refused := unsynced.sync()):  # nothing renamed says more than the transcripts on disk
        failed.extend((w, refused[0][1]) for w, tmp in prepared)
        for w, tmp in prepared:
            w.dir.discard(tmp)
        return False
    put: dict[int, tuple[PrivateDir, list[Write]]] = {}
    for w, tmp in prepared:
        try:
            w.dir.put(tmp, w.name)
            put.setdefault(id(w.dir), (w.dir, []))[1].append(w)
        except OSError as exc:
            failed.append((w, exc))
            ok = False
    for directory, renamed in put.values():
        try:
            directory.sync()
        except OSError as exc:  # renamed but perhaps not durable: written again next time
            failed.extend((w, exc) for w in renamed)
            ok = False
    return ok


def _write_logged(batch: Batch, unsynced: Unsynced, redo: RedoLog) -> None:
    """The batch's writes, and the lazy appends not yet durable, in one record of the redo log (one
    fdatasync), then done on the files without fsync, in stage order. Once the record is on disk the
    batch is written, whatever the files do; a write a file refuses is noted `unapplied`, to be done
    again (it is in the log meanwhile, and each checkpoint logs it anew until it is done)."""
    tails, writes, ends = unsynced.ops(), [], {}
    try:
        for w in batch.writes:
            if w.append:
                where = (id(w.dir), w.name)
                start = ends[where] if where in ends else w.dir.size(w.name)
                ends[where] = start + len(w.data)
                writes.append((w, Op("a", w.dir, w.name, w.data, start)))
            else:
                writes.append((w, Op("p", w.dir, w.name, w.data)))
        redo.log([op for _, op in tails] + [op for _, op in writes])
    except OSError as exc:
        batch.failed.extend((w, exc) for w in batch.writes)
        return
    unsynced.logged(tails, redo)
    for w, op in writes:
        try:
            op.do()
        except OSError as exc:
            batch.unapplied.append((w, exc))
            redo.applied(op, exc)
            continue
        redo.applied(op, None)
