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
append would otherwise overtake). ``commit()`` seals and returns a Commit
that is done once that much is on disk: a request that must be answered
only then (a prompt) waits on it instead of fsyncing in the event loop, and
all the commits that come while the thread writes share its next batch (a
group commit: one fsync per file and one per directory for all of them).

A write the disk refuses is kept for the next flush and reported through
``on_error`` (always in the loop); it is never dropped, and never fatal. A
commit whose batch had a refusal fails with that error; what a failed
replace would have written is rendered again from the object, not kept.
"""

from __future__ import annotations

import errno
import itertools
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import trio

from .private import PrivateDir


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
class _Pending:
    stage: int
    render: Callable[[], Replace] | None = None  # a replace; else an append to dir/name
    dir: PrivateDir | None = None
    name: str = ""
    parts: list[bytes] = field(default_factory=list)


@dataclass(slots=True)
class _Write:
    """A rendered write, ready for the disk; `pending` goes back in the queue if the disk refuses it."""

    key: Hashable
    pending: _Pending
    dir: PrivateDir
    name: str
    data: bytes
    append: bool


@dataclass(slots=True)
class _Batch:
    writes: list[_Write]  # sorted by stage
    commits: list[Commit] = field(default_factory=list)  # settled when the batch is written (or fails)
    done: bool = False
    failed: list[tuple[_Write, OSError]] = field(default_factory=list)
    held: list[_Write] = field(default_factory=list)  # a later stage than one that failed: not tried


class SaveQueue:
    """Pending writes by key; ``flush`` writes them now; ``run`` writes them soon after each change."""

    def __init__(self, on_error: Callable[[Hashable, OSError], None] = lambda key, exc: None):
        self.on_error = on_error
        self._pending: dict[Hashable, _Pending] = {}  # the open batch: coalesced, rendered when taken
        self._commits: list[Commit] = []  # the open batch's: settled once it is written
        self._sealed: list[_Batch] = []  # rendered already, each to land before the ones after it
        self._wanted = trio.Event()
        self._lock = threading.Lock()  # one writer at a time: the worker thread or a flush in the loop
        self._in_flight: list[_Batch] = []  # handed to the thread, perhaps not written yet

    def replace(self, key: Hashable, render: Callable[[], Replace], *, stage: int = 1) -> None:
        """`render()` gives a whole file's content; only the latest one for `key` runs, when it is written."""
        self._pending[key] = _Pending(stage, render=render)
        self._wanted.set()

    def append(self, key: Hashable, dir: PrivateDir, name: str, data: bytes, *, stage: int = 0) -> None:
        """Add `data` to the file `name`; appends for `key` are joined in order."""
        pending = self._pending.get(key)
        if pending is None or pending.render is not None:
            pending = self._pending[key] = _Pending(stage, dir=dir, name=name)
        pending.parts.append(data)
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
            if _write_batches(batches):
                batches.append(self._take(only))
                _write(batches[-1])
        return self._settle(batches)

    async def run(self) -> None:
        """Write soon after every change, in a worker thread, for ever; a clean stop should flush once more."""
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await trio.sleep(0)  # let the other woken tasks add their changes to this batch
            self.seal()
            batches, self._sealed = self._sealed, []
            self._in_flight = batches
            try:
                if _virtual_time() or not any(batch.writes for batch in batches):  # nothing to wait for
                    self._write_locked(batches)
                else:
                    await trio.to_thread.run_sync(self._write_locked, batches)
            finally:
                if self._in_flight is batches:
                    self._in_flight = []
            if self._settle(batches):  # the disk refused: try again later, not in a busy loop
                await trio.sleep(1)
                self._wanted.set()

    def _write_locked(self, batches: list[_Batch]) -> None:
        with self._lock:
            _write_batches(batches)

    def _take(self, only: Callable[[Hashable], bool] | None) -> _Batch:
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
                writes.append(_Write(key, item, file.dir, file.name, file.data, append=False))
            else:
                writes.append(_Write(key, item, item.dir, item.name, b"".join(item.parts), append=True))
        return _Batch(writes, commits)

    def _settle(self, batches: list[_Batch]) -> list[Hashable]:
        """In the loop, once batches were written: what failed or was held back goes back in the queue,
        is reported, and the batches' commits are settled; the keys not written. Each batch is settled
        once, whether the thread or a flush wrote it."""
        unwritten, errors = [], {}
        for batch in reversed(batches):  # the newest first: each text goes back before what came since
            for write in [*batch.held, *(w for w, _ in batch.failed)]:
                self._keep(write)
            for write, exc in batch.failed:
                self.on_error(write.key, exc)
            if batch.failed or batch.held:
                errors[id(batch)] = batch.failed[0][1] if batch.failed else _not_written()
                unwritten[:0] = [w.key for w, _ in batch.failed] + [w.key for w in batch.held]
            batch.failed, batch.held = [], []
        for batch in batches:  # in order: a later prompt's commit never lands before an earlier one's
            commits, batch.commits = batch.commits, []
            for commit in commits:
                commit._settle(errors.get(id(batch)))
        return unwritten

    def _keep(self, write: _Write) -> None:
        """A write that failed, or was held back, goes back in the open batch, before what came since."""
        newer = self._pending.get(write.key)
        if newer is None:
            self._pending[write.key] = write.pending  # a replace is rendered again: what the object is then
            if write.append:
                write.pending.parts[:] = [write.data]
        elif write.append and newer.render is None:
            newer.parts.insert(0, write.data)
        # else a newer replace supersedes the failed one


def _virtual_time() -> bool:
    """Under trio's MockClock (tests with autojump_clock), time jumps whenever every task waits, and it
    would jump past every deadline while a thread writes; there the writes are done in the loop."""
    return type(trio.lowlevel.current_clock()).__name__ == "MockClock"


def _not_written() -> OSError:
    return OSError(errno.EIO, "not written: an earlier write to the state directory failed")


def _write_batches(batches: list[_Batch]) -> bool:
    """Write batches in order (the caller holds the lock) until one fails; False if one did."""
    for i, batch in enumerate(batches):
        _write(batch)
        if batch.failed or batch.held:  # a later batch never lands before an earlier one that failed
            for later in batches[i + 1:]:
                if not later.done:
                    later.done = True
                    later.held = list(later.writes)
            return False
    return True


def _write(batch: _Batch) -> None:
    """Do a batch's writes, stage by stage (the caller holds the lock); failures are noted in the batch."""
    if batch.done:
        return
    batch.done = True
    stages = [list(writes) for _, writes in itertools.groupby(batch.writes, key=lambda w: w.pending.stage)]
    for i, writes in enumerate(stages):
        if not _write_stage(writes, batch.failed):
            # a later stage never lands before an earlier one that failed
            batch.held.extend(w for later in stages[i + 1:] for w in later)
            return


def _write_stage(writes: list[_Write], failed: list) -> bool:
    """One stage: appends, then replaces prepared, renamed, and made durable with one fsync per directory."""
    ok, prepared = True, []
    for w in writes:
        try:
            if w.append:
                w.dir.append(w.name, w.data)
            else:
                prepared.append((w, w.dir.prepare(w.name, w.data)))
        except OSError as exc:
            failed.append((w, exc))
            ok = False
    put: dict[int, tuple[PrivateDir, list[_Write]]] = {}
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
