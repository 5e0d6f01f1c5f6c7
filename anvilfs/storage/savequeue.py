"""Background writes that may wait a moment: coalesced, ordered, and written off the event loop.

What must be on disk before a request is answered is written at once
(PrivateDir, or ``flush``). Everything else is put here: the latest
``replace`` for a key wins, ``append``s for a key are joined, and ``run``
writes them soon after, so a burst of changes costs one write per file, not
one per change.

Writes run in stages, lowest first, so a domain can say what must reach the
disk before what: sessions append their transcript (stage 0) before they
replace the file that says a turn ended (stage 2), so that file never
claims an answer the transcript does not have. The replaces of one stage
share one fsync of their directory (a group commit: n files cost n + 1
fsyncs, not 2n).

Off the event loop: ``run`` renders the pending writes in the loop (a
replace's ``render()`` reads its object as it is now and returns the bytes)
and hands the batch to a worker thread, so the fsyncs of ended turns do not
hold up every connection. One writer at a time: the thread and a ``flush``
from the loop take turns on a lock, and a ``flush`` first writes what the
thread has not yet written of the batch taken before it. So writes land in
the order they were taken, and a file's older content never lands after its
newer.

Seals and commits: ``seal()`` renders what is pending now, as it is now,
and puts it ahead of everything queued after it (a session's turn start:
its .toml must land before the turn's log lines, which a later stage-0
append would otherwise overtake). ``commit()`` returns a Commit that is
done once everything pending then is on disk, without an fsync in the
event loop (the sessions' prompt log waits on one before it deletes a full
segment, whose prompts the pending .tomls hold); the commits that come
while the thread writes share its next batch. A commit never settles
before a write it follows that was refused and kept.

With a redo log (``redo=``: the sessions' queue has one), a batch is not
written file by file with an fsync each: it goes in one record of the log,
fdatasynced, and then into its files without fsync; checkpoints fsync the
files now and then and delete the log (redolog.py). The stages still order
the writes in place, and everything said here of "on disk" holds of the
record.

Lazy appends (``append(..., lazy=True)``: a running turn's transcript) are
written without an fsync of their own, and made durable before the next
replace lands, by a ``flush`` that picks their key, or within LAZY_SYNC
(writes.py): a turn streaming output costs no fsync per line.

A write the disk refuses is kept for the next flush and reported through
``on_error`` (always in the loop); it is never dropped, and never fatal. A
commit whose batch had a refusal fails with that error; what a failed
replace would have written is rendered again from the object, not kept.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Hashable

import trio

from .private import PrivateDir
from .redolog import CHECKPOINT_BYTES, CHECKPOINT_SECONDS, Op, RedoLog
from .writes import (LAZY_SYNC, Batch, Commit, Pending, Replace, Unsynced, Write, not_written, virtual_time,
                     write_batch, write_batches)

__all__ = ["Commit", "Replace", "SaveQueue"]


class SaveQueue:
    """Pending writes by key; ``flush`` writes them now; ``run`` writes them soon after each change."""

    def __init__(self, on_error: Callable[[Hashable, OSError], None] = lambda key, exc: None,
                 redo: RedoLog | None = None):
        self.on_error = on_error
        self.redo = redo  # with one, a batch is one record of it, and checkpoints fsync the files
        self._checkpoint_due: float | None = None  # when the redo log's era is made durable in place
        self._pending: dict[Hashable, Pending] = {}  # the open batch: coalesced, rendered when taken
        self._commits: list[Commit] = []  # the open batch's: settled once it is written
        self._sealed: list[Batch] = []  # rendered already, each to land before the ones after it
        self._wanted = trio.Event()
        self._lock = threading.Lock()  # one writer at a time: the worker thread or a flush in the loop
        self._in_flight: list[Batch] = []  # handed to the thread, perhaps not written yet
        self._unsynced = Unsynced()  # lazy appends written and not yet fsynced (under the lock)
        self._sync_due: float | None = None  # when they are fsynced at the latest (trio time)

    def replace(self, key: Hashable, render: Callable[[], Replace], *, stage: int = 1) -> None:
        """`render()` gives a whole file's content; only the latest one for `key` runs, when it is written."""
        self._pending[key] = Pending(stage, render=render)
        self._wanted.set()

    def append(self, key: Hashable, dir: PrivateDir, name: str, data: bytes, *, stage: int = 0,
               lazy: bool = False) -> None:
        """Add `data` to the file `name`; appends for `key` are joined in order. A `lazy` one is written
        without an fsync of its own: on disk before the next replace lands, or within LAZY_SYNC."""
        pending = self._pending.get(key)
        if pending is None or pending.render is not None:
            pending = self._pending[key] = Pending(stage, dir=dir, name=name, lazy=lazy)
        pending.parts.append(data)
        pending.lazy = pending.lazy and lazy
        self._wanted.set()

    def seal(self) -> None:
        """Render what is pending, now, to land before anything queued from here on."""
        if self._pending or self._commits:
            self._sealed.append(self._take(None))
            self._wanted.set()

    def commit(self) -> Commit:
        """A Commit done once everything pending now (and everything before it) is on disk.

        It joins the open batch, not a batch of its own: the commits that come while the thread
        writes go out together in its next batch, one fsync per file and per directory.
        """
        commit = Commit()
        self._commits.append(commit)
        self._wanted.set()
        return commit

    def discard(self, key: Hashable) -> None:
        """Forget a pending write (its object is gone, or was just written another way)."""
        self._pending.pop(key, None)

    def forget_lazy(self, only: Callable[[Hashable], bool]) -> None:
        """Forget the unsynced lazy appends of the keys `only` picks (their file moved away with its
        object): a later fsync must not write them into a new file of the same name."""
        with self._lock:
            self._unsynced.forget(only)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._pending

    def __len__(self) -> int:
        return len(self._pending)

    # ------------------------------------------------------------ writing

    def flush(self, only: Callable[[Hashable], bool] | None = None) -> list[Hashable]:
        """Write everything pending (or the keys `only` picks) now, in the loop; what fails stays pending.

        What was sealed, and what the thread has not written yet, goes first, whatever `only` says;
        if any of that fails, nothing more is written. Returns the keys still pending because their
        write (or an earlier one's) failed.
        """
        with self._lock:
            batches, self._sealed = self._in_flight + self._sealed, []
            if write_batches(batches, self._unsynced, self.redo):
                batches.append(self._take(only))
                write_batch(batches[-1], self._unsynced, self.redo)
            refused = self._unsynced.sync(only, self.redo)  # the lazy appends it picks are on disk too
        unwritten = self._settle(batches)
        for key, exc in refused:
            self.on_error(key, exc)
        return unwritten + [key for key, _ in refused]

    def gone(self, dir: PrivateDir, names: list[str]) -> None:
        """Files moved away or deleted (a removed session's), after the fact: with a redo log, a record that
        says so, so that a replay after a crash does not bring them back. Raises OSError."""
        if self.redo is not None:
            with self._lock:
                self.redo.log([Op("g", dir, name) for name in names])

    def checkpoint(self) -> None:
        """Make everything the redo log holds durable in its files now, and delete it (a clean stop)."""
        if self.redo is not None:
            with self._lock:
                if (era := self._begin_checkpoint()) is not None:
                    self._end_checkpoint(era, self._sync_era(era))

    async def run(self) -> None:
        """Write soon after every change, in a worker thread, for ever; a clean stop should flush once more."""
        while True:
            due = min(math.inf if t is None else t for t in (self._sync_due, self._checkpoint_due))
            with trio.move_on_at(due):
                await self._wanted.wait()
            refused = False
            if self._wanted.is_set():
                self._wanted = trio.Event()
                await trio.sleep(0)  # let the other woken tasks add their changes to this batch
                refused = await self._write_taken()
            if self._sync_due is not None and trio.current_time() >= self._sync_due:
                refused = await self._sync_lazy() or refused
            if not self._unsynced:
                self._sync_due = None
            elif self._sync_due is None:
                self._sync_due = trio.current_time() + LAZY_SYNC
            if self.redo is not None:
                await self._checkpoint_when_due()
            if refused:  # the disk refused: try again later, not in a busy loop
                await trio.sleep(1)
                self._wanted.set()

    async def _write_taken(self) -> bool:
        """Write what is sealed and pending, off the loop; True if the disk refused some of it."""
        self.seal()
        batches, self._sealed = self._sealed, []
        self._in_flight = batches
        try:
            await _off_loop(self._write_locked, batches, needed=any(batch.writes for batch in batches))
        finally:
            if self._in_flight is batches:
                self._in_flight = []
        unapplied = any(batch.unapplied for batch in batches)  # in the redo log, refused in place: again
        return bool(self._settle(batches)) or unapplied

    async def _sync_lazy(self) -> bool:
        """fsync the lazy appends that have waited LAZY_SYNC; True if the disk refused."""
        refused = await _off_loop(self._sync_locked)
        for key, exc in refused:
            self.on_error(key, exc)
        return bool(refused)

    async def _checkpoint_when_due(self) -> None:
        """The redo log's era made durable in place once it is CHECKPOINT_SECONDS old or CHECKPOINT_BYTES
        long; batches go on meanwhile (the fsyncs are made without the lock)."""
        redo, now = self.redo, trio.current_time()
        if not redo.era.segments:
            self._checkpoint_due = None
            return
        if self._checkpoint_due is None:
            self._checkpoint_due = now + CHECKPOINT_SECONDS
        if now < self._checkpoint_due and redo.era.bytes < CHECKPOINT_BYTES:
            return
        with self._lock:
            era = self._begin_checkpoint()
        if era is None:
            self._checkpoint_due = now + 1  # refused: again in a second
            return
        try:
            error = await _off_loop(self._sync_era, era)
        except BaseException:  # cancelled (a stop) before or while the thread synced: the era is not lost
            with self._lock:
                self.redo.end_checkpoint(era, OSError("the checkpoint was cancelled"))
            raise
        with self._lock:
            self._end_checkpoint(era, error)
        self._checkpoint_due = None if error is None else now + 1  # refused: again in a second

    def _begin_checkpoint(self):
        """The redo log's era to make durable (the caller holds the lock), or None if the log refused the
        record that carries its refused writes (reported)."""
        try:
            return self.redo.begin_checkpoint()
        except OSError as exc:
            self.on_error(("redo", "checkpoint"), exc)
            return None

    def _sync_era(self, era) -> OSError | None:
        try:
            self.redo.sync(era)
        except OSError as exc:
            return exc
        return None

    def _end_checkpoint(self, era, error: OSError | None) -> None:
        try:
            self.redo.end_checkpoint(era, error)
        except OSError as exc:  # a segment not deleted: kept for the next checkpoint, never replayed alone
            self.redo.end_checkpoint(era, exc)
            error = exc
        if error is not None:
            self.on_error(("redo", "checkpoint"), error)

    def _write_locked(self, batches: list[Batch]) -> None:
        with self._lock:
            write_batches(batches, self._unsynced, self.redo)

    def _sync_locked(self) -> list:
        with self._lock:
            return self._unsynced.sync(None, self.redo)

    def _take(self, only: Callable[[Hashable], bool] | None) -> Batch:
        """Render the pending writes (all, or those `only` picks) into a batch; they leave the queue."""
        commits = []
        if only is None:
            taken, self._pending = self._pending, {}
            commits, self._commits = self._commits, []
        else:
            taken = {key: self._pending.pop(key) for key in [k for k in self._pending if only(k)]}
        writes = []
        for key, item in sorted(taken.items(), key=lambda kv: kv[1].stage):
            if item.render is not None:
                file = item.render()
                writes.append(Write(key, item, file.dir, file.name, file.data, append=False))
            else:
                writes.append(Write(key, item, item.dir, item.name, b"".join(item.parts), append=True))
        return Batch(writes, commits)

    def _settle(self, batches: list[Batch]) -> list[Hashable]:
        """In the loop, once batches were written: what failed or was held back goes back in the queue,
        is reported, and the batches' commits are settled; the keys not written. Each batch is settled
        once, whether the thread or a flush wrote it."""
        unwritten, errors = [], {}
        for batch in reversed(batches):  # the newest first: each text goes back before what came since
            for write in [*batch.held, *(w for w, _ in batch.failed), *(w for w, _ in batch.unapplied)]:
                self._keep(write)
            for write, exc in batch.failed + batch.unapplied:  # unapplied: on disk (the redo log), not in place
                self.on_error(write.key, exc)
            batch.unapplied = []
            if batch.failed or batch.held:
                errors[id(batch)] = batch.failed[0][1] if batch.failed else not_written()
                unwritten[:0] = [w.key for w, _ in batch.failed] + [w.key for w in batch.held]
            batch.failed, batch.held = [], []
        for batch in batches:  # in order: a later prompt's commit never lands before an earlier one's
            commits, batch.commits = batch.commits, []
            for commit in commits:
                commit._settle(errors.get(id(batch)))
        if errors:  # what was kept is written after the batches sealed meanwhile: their commits wait for it
            for batch in self._sealed:
                self._commits.extend(batch.commits)
                batch.commits = []
        return unwritten

    def _keep(self, write: Write) -> None:
        """A write that failed, or was held back, goes back in the open batch, before what came since."""
        newer = self._pending.get(write.key)
        if newer is None:
            self._pending[write.key] = write.pending  # a replace is rendered again: what the object is then
            if write.append:
                write.pending.parts[:] = [write.data]
        elif write.append and newer.render is None:
            newer.parts.insert(0, write.data)
        # else a newer replace supersedes the failed one


async def _off_loop(fn, *args, needed: bool = True):
    """fn(*args) in a worker thread; in the loop when there is nothing to wait for, or under trio's
    MockClock (tests with autojump_clock), where time would jump past every deadline while a thread
    writes."""
    if not needed or virtual_time():
        return fn(*args)
    return await trio.to_thread.run_sync(fn, *args)
