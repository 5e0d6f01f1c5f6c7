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

A write the disk refuses is kept for the next flush and reported through
``on_error`` (always in the loop); it is never dropped, and never fatal.
"""

from __future__ import annotations

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
    done: bool = False
    failed: list[tuple[_Write, OSError]] = field(default_factory=list)
    held: list[_Write] = field(default_factory=list)  # a later stage than one that failed: not tried


class SaveQueue:
    """Pending writes by key; ``flush`` writes them now; ``run`` writes them soon after each change."""

    def __init__(self, on_error: Callable[[Hashable, OSError], None] = lambda key, exc: None):
        self.on_error = on_error
        self._pending: dict[Hashable, _Pending] = {}
        self._wanted = trio.Event()
        self._lock = threading.Lock()  # one writer at a time: the worker thread or a flush in the loop
        self._in_flight: _Batch | None = None  # handed to the thread, perhaps not written yet

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

        Returns the keys that are still pending because their write (or an earlier stage's) failed.
        """
        with self._lock:
            if self._in_flight is not None:  # what the thread has not written yet goes first
                _write(self._in_flight)
                self._settle(self._in_flight)
            batch = self._take(only)
            _write(batch)
        return self._settle(batch)

    async def run(self) -> None:
        """Write soon after every change, in a worker thread, for ever; a clean stop should flush once more."""
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await trio.sleep(0)  # let the other woken tasks add their changes to this batch
            batch = self._in_flight = self._take(None)
            try:
                await trio.to_thread.run_sync(self._write_locked, batch)
            finally:
                if self._in_flight is batch:
                    self._in_flight = None
            if self._settle(batch):  # the disk refused: try again later, not in a busy loop
                await trio.sleep(1)
                self._wanted.set()

    def _write_locked(self, batch: _Batch) -> None:
        with self._lock:
            _write(batch)

    def _take(self, only: Callable[[Hashable], bool] | None) -> _Batch:
        """Render the pending writes (all, or those `only` picks) into a batch; they leave the queue."""
        if only is None:
            taken, self._pending = self._pending, {}
        else:
            taken = {key: self._pending.pop(key) for key in [k for k in self._pending if only(k)]}
        writes = []
        for key, item in sorted(taken.items(), key=lambda kv: kv[1].stage):
            if item.render is not None:
                file = item.render()
                writes.append(_Write(key, item, file.dir, file.name, file.data, append=False))
            else:
                writes.append(_Write(key, item, item.dir, item.name, b"".join(item.parts), append=True))
        return _Batch(writes)

    def _settle(self, batch: _Batch) -> list[Hashable]:
        """In the loop, after a batch was written: what failed goes back in the queue, and is reported."""
        failed, batch.failed = batch.failed, []
        held, batch.held = batch.held, []
        for write, exc in failed:
            self._keep(write)
            self.on_error(write.key, exc)
        for write in held:
            self._keep(write)
        return [write.key for write, _ in failed] + [write.key for write in held]

    def _keep(self, write: _Write) -> None:
        newer = self._pending.get(write.key)
        if newer is None:
            self._pending[write.key] = write.pending
            if write.append:
                write.pending.parts[:] = [write.data]
        elif write.append and newer.render is None:
            newer.parts.insert(0, write.data)  # the failed text goes before what came since
        # else a newer replace supersedes the failed one


def _write(batch: _Batch) -> None:
    """Do a batch's writes, stage by stage (the caller holds the lock); failures are noted in the batch."""
    if batch.done:
        return
    batch.done = True
    writes = batch.writes
    start = 0
    while start < len(writes):
        stage = writes[start].pending.stage
        end = start
        while end < len(writes) and writes[end].pending.stage == stage:
            end += 1
        if not _write_stage(writes[start:end], batch.failed):
            batch.held.extend(writes[end:])  # a later stage never lands before an earlier one that failed
            return
        start = end


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
