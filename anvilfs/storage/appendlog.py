"""A write-ahead log: records that must be on disk before a request is answered, one fdatasync a group.

What a request adds (a prompt) is appended here and made durable with one
fdatasync, by a worker thread of its own, so its answer waits neither for
the save queue's batch in flight (the same session's ended turn: several
files and directories to fsync) nor for the event loop. The record's
owner saves the same change in its own files later, in the background;
after a crash it reads the log back (``records``) and applies what its
files do not have yet. Records must therefore say enough to be applied
twice safely (a sequence number the owner's files remember).

    DIR/NNNNNN.wal   segments, each a run of lines: CRC32 (8 hex digits) SP record LF

Group commit: the records added while the thread writes go out together in
its next write, one fdatasync for all of them. A record's Commit is done
once it is on disk, or failed with the disk's error; a failed write is cut
off again (ftruncate), so a refused record is not replayed later.

Segments: once a segment passes ``segment_bytes``, the next records go to a
new one, and the old is deleted when ``covered()`` (the owner's Commit of
everything it had pending then, which includes what the old segment holds)
is done. ``retire()`` after a restart's replay, once the owner saved what it
applied, deletes every segment read. A line that is torn (a crash in the
middle of a write: never answered) or fails its CRC is left out of
``records`` and reported.
"""

from __future__ import annotations

import errno
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from .loglines import checked_line, crc_line
from .private import LogFile, PrivateDir
from .writes import Commit, virtual_time

SUFFIX = ".wal"


@dataclass(slots=True)
class _Group:
    data: list[bytes] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    done: bool = False
    error: OSError | None = None
    full: list[str] = field(default_factory=list)  # segments its write closed: deleted once covered


@dataclass(slots=True)
class _Bug:
    """What went wrong in the log's thread or its callbacks, not on the disk: run() raises it."""

    found: trio.Event
    exc: BaseException | None = None

    def caught(self, exc: BaseException) -> None:
        """In the loop (from the thread: through run_sync_soon); the first one is what run() raises."""
        self.exc = self.exc or exc
        self.found.set()


class AppendLog:
    """Durable records in segment files of one private directory; ``run`` writes them in a thread."""

    def __init__(self, dir: PrivateDir, *, segment_bytes: int = 4 << 20,
                 covered: Callable[[], Commit | None] = lambda: None):
        self.dir = dir
        self.segment_bytes = segment_bytes
        self.covered = covered
        self._read = sorted(dir.names(SUFFIX), key=_number)  # the segments a restart found, in order: retire()
        self._damaged: set[str] = set()  # of those, the ones with a line that cannot be read
        last = max((_number(n) for n in self._read), default=0)
        self._numbers = itertools.count(last + 1)
        self._file: LogFile | None = None
        self._full: list[str] = []  # closed segments not deleted yet (their cover failed): tried again
        self._lock = threading.Lock()  # one writer at a time: the thread or a flush in the loop
        # the loop adds to _open and the thread takes it: this guards both and _in_flight, and wakes the thread
        self._handed = threading.Condition()
        self._open = _Group()
        self._in_flight: _Group | None = None
        self._stopping = False
        self._wanted = trio.Event()  # under virtual time, where the loop writes: a record waits

    # ------------------------------------------------------------ reading back

    def records(self) -> tuple[list[bytes], list[str]]:
        """The whole records of the segments found at the start, in order, and a line per damaged one."""
        records, problems = [], []
        for name in self._read:
            try:
                lines = (self.dir.read(name) or b"").split(b"\n")
            except OSError as exc:  # not a file of ours (a directory, another user's): reported, kept aside
                problems.append(f"{self.dir.path}/{name}: cannot be read ({exc}); left out")
                self._damaged.add(name)
                continue
            for i, line in enumerate(lines):
                if not line:
                    continue
                record = checked_line(line)
                if record is not None:
                    records.append(record)
                elif i < len(lines) - 1:  # the last line without its LF is a torn write, never answered
                    problems.append(f"{self.dir.path}/{name}: line {i + 1} is damaged (its CRC does not match); "
                                    f"left out, and the segment kept as {name}.damaged")
                    self._damaged.add(name)
        return records, problems

    def retire(self) -> None:
        """Delete the segments found at the start: their records are saved elsewhere now. One with a
        damaged line is kept as NAME.damaged, for a person to look at."""
        for name in self._read:
            if name in self._damaged:
                self.dir.move(name, self.dir, name + ".damaged")
            else:
                self.dir.remove(name)
        self._read = []

    # ------------------------------------------------------------ writing

    def add(self, record: bytes) -> Commit:
        """Append `record` (no LF in it) soon; the Commit is done once it is on disk."""
        if b"\n" in record:
            raise ValueError("a log record is one line")
        commit = Commit()
        with self._handed:
            self._open.data.append(crc_line(record))
            self._open.commits.append(commit)
            self._handed.notify()
        self._wanted.set()
        return commit

    def flush(self) -> None:
        """Write what is pending now, in the loop (a clean stop, once ``run`` has ended): the group in
        flight first."""
        with self._lock:
            with self._handed:
                groups = [g for g in (self._in_flight, self._open) if g is not None]
                self._open = _Group()
            for group in groups:
                self._write(group)
        for group in groups:
            self._settle(group)

    async def run(self) -> None:
        """Write each group in a thread of the log's own, for ever: the group is what was added while
        the write before it went on. The thread is woken by ``add`` itself and hands each written
        group straight back to the loop, so a record waits for no scheduler pass of its own on either
        side (which cost a prompt measurably when these were trio tasks: benchmarks/history.md)."""
        if virtual_time():  # trio's MockClock would jump past every deadline while a thread writes
            await self._run_in_loop()
            return
        token = trio.lowlevel.current_trio_token()
        bug = _Bug(trio.Event())
        thread = threading.Thread(target=self._serve, args=(token, bug), daemon=True, name=f"log {self.dir.path}")
        thread.start()
        try:
            await bug.found.wait()
        finally:
            with self._handed:
                self._stopping = True
                self._handed.notify()
            with trio.CancelScope(shield=True):  # its last group is settled before the loop goes on
                await trio.to_thread.run_sync(thread.join)
            self._stopping = False
            if bug.exc is not None:  # also at a clean stop: a bug in the last write is not swallowed
                raise bug.exc

    def _serve(self, token: trio.lowlevel.TrioToken, bug: _Bug) -> None:
        """The thread: take the open group, write it, give it back to the loop; until told to stop."""
        try:
            while True:
                with self._handed:
                    while not self._open.data and not self._stopping:
                        self._handed.wait()
                    if not self._open.data:
                        return
                    group, self._open = self._open, _Group()
                    self._in_flight = group
                self._write_locked(group)
                token.run_sync_soon(self._landed, group, bug)
        except BaseException as exc:  # a bug, not the disk (_write keeps those): the server's run fails with it
            token.run_sync_soon(bug.caught, exc)

    def _landed(self, group: _Group, bug: _Bug) -> None:
        """In the loop (a run_sync_soon callback, where an exception would end the whole trio run)."""
        with self._handed:
            if self._in_flight is group:
                self._in_flight = None
        try:
            self._settle(group)
        except BaseException as exc:  # a bug in a commit's callback: run() raises it, as a task's would be
            bug.caught(exc)

    async def _run_in_loop(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await trio.sleep(0)  # let the other woken tasks add their records to this group
            group, self._open = self._open, _Group()
            if group.data:
                self._write_locked(group)
                self._settle(group)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _write_locked(self, group: _Group) -> None:
        with self._lock:
            self._write(group)

    def _write(self, group: _Group) -> None:
        """Append a group and fdatasync it (the caller holds the lock); a full segment is closed after."""
        if group.done or not group.data:
            return
        group.done = True
        try:
            if self._file is None:
                self._file = self.dir.open_log(f"{next(self._numbers):06d}{SUFFIX}")
            self._file.write_durably(b"".join(group.data))
        except BaseException as exc:
            # never settled as written: a bug (not OSError) fails the group's commits too, then goes on up
            group.error = exc if isinstance(exc, OSError) else OSError(errno.EIO, f"not written: {exc!r}")
            if self._file is not None:  # what the cut-off left, if it failed too, stays a torn last line
                group.full.append(self._file.name)
                self.close()
            if not isinstance(exc, OSError):
                raise
            return
        if self._file.size >= self.segment_bytes:
            group.full.append(self._file.name)
            self.close()  # the next group opens the next segment

    def _settle(self, group: _Group) -> None:
        """In the loop: the group's commits, then the full segments' deletion once they are covered."""
        commits, group.commits = group.commits, []
        for commit in commits:
            commit._settle(group.error)
        # only now: the cover taken below must include this group's records, which its commits just
        # handed to their owner (a later group's segment waits for that group's settling)
        full, group.full = self._full + group.full, []
        if full:
            self._full = []
            cover = self.covered()
            if cover is None:
                self._delete(full, None)
            else:
                cover.then(lambda error: self._delete(full, error))

    def _delete(self, names: list[str], error: OSError | None) -> None:
        if error is not None:  # not saved elsewhere yet: kept, and tried again with the next full segment
            self._full[:0] = names
            return
        for name in names:
            try:
                self.dir.remove(name, sync=False)  # in the loop: no fsync for a deletion that may be undone
            except OSError:  # a segment left behind is only read again after a restart, and applied twice safely
                pass


def _number(name: str) -> int:
    stem = name.removesuffix(SUFFIX)
    return int(stem) if stem.isdigit() else 0
