"""A directory of objects, one TOML file each, that people may read and annotate by hand.

Files are read with the standard library's tomllib; a start parses only
those changed by someone else since the last: what each file parsed to is
kept in the database (parsed.py), by the start that read it or by the
writer that wrote it. A change is rendered in the event loop
and written (atomically, fsynced) by the database's writer thread, in order
with everything else queued there, its history message kept in the same job
right after the file (history.py says the order and what a restart does);
the request that made it is answered once both are on disk. The changes
queued while the writer is busy go in one job: each file fsynced, the
directory once, their messages in one commit. A change joins the job queued
before it until the writer takes that job, so it may reach the disk before
a change of another kind queued between them, never after. What the fast
writer wrote is remembered by its bytes: while the file is still exactly
that, the next change is written the fast way too; once a person has edited
it (a comment, a blank line), it is edited with tomlkit from then on, so what
they added survives. A file that no longer parses is never overwritten: the
change is refused at once with the parse error.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import tomllib
from collections.abc import Callable

import tomlkit

from ..faults import kill_point
from ..waitable import answer_after
from . import tomlwrite
from .database import Commit, Database
from .history import GitHistory
from .parsed import ParsedFiles, remember_written
from .private import PrivateDir, StorageError


class BrokenFile(StorageError):
    """An object's file that does not parse (edited by hand); it is left exactly as it is."""


class TomlObjects:
    """Objects of one kind: `DIR/<id>.toml`, each a table named `table` (e.g. [bead])."""

    def __init__(self, directory: PrivateDir, table: str, db: Database, history: GitHistory | None = None):
        self.dir = directory
        self.table = table
        self._db = db
        self._history = history
        self._written: dict[str, bytes] = {}  # id -> digest of the bytes we last wrote
        self._queued: dict[str, bytes] = {}  # id -> the bytes of its last write still on its way to disk
        self._batch: _Batch | None = None  # the writes queued together; the writer thread may have taken it
        self._unchecked: set[str] = set()  # ids loaded but not yet compared with what the fast writer writes

    def path(self, object_id: str) -> str:
        return f"{self.dir.path}/{object_id}.toml"

    def load_all(self) -> tuple[dict[str, dict], dict[str, str]]:
        """Every object's table by id, and for each file that cannot be read, why."""
        found, broken = {}, {}
        parsed = ParsedFiles(self._db, self.table)  # what each file parsed to, from the last start
        for name in self.dir.names(".toml"):
            object_id = name.removesuffix(".toml")
            try:  # a link or another user's file is refused: broken, not fatal
                found[object_id] = parsed.table(self.dir, name, self._parse)
            except (StorageError, tomllib.TOMLDecodeError, UnicodeDecodeError, KeyError, TypeError,
                    RecursionError) as exc:  # RecursionError: arrays nested hundreds deep (tomllib recurses)
                broken[object_id] = _why(exc, self.table)
                continue
            self._unchecked.add(object_id)  # untouched or not is asked at its first change: a start reads 10,000
        parsed.finish()
        return found, broken

    def _parse(self, raw: bytes):
        return tomllib.loads(raw.decode())[self.table]

    def write(self, object_id: str, data: dict, *, new: bool = False, message: str = "",
              settled: Callable[[OSError | None], None] = lambda error: None) -> Written:
        """Queue `data` as the object's table, and `message` for the history after it; comments a person added
        to the file are kept. `settled(None)` once the file is on disk, `settled(error)` if it never got there.
        BrokenFile (nothing queued) if a person left the file so that it no longer parses."""
        raw = self._render(object_id, None if new else self._current(object_id), data)
        self._queued[object_id] = raw
        item = _Write(f"{object_id}.toml", raw, message)
        batch = self._batch
        if batch is None or not batch.join(item):  # the writer has taken that one: a new batch
            batch = self._batch = _Batch(item)
            # the request waits for its own Written, not the batch's Commit: see Written.wait
            batch.commit = self._db.call(lambda conn: self._put(conn, batch), barrier=True, answer=False)
        written = Written(batch.commit, item)
        answer_after(written)  # the request that made it waits for its own file, not only for the batch's commit
        batch.commit.then(lambda error: self._settled(object_id, raw, message, error or item.error, item.put,
                                                      settled))
        if self._history is not None:
            self._history.follow(batch.commit)
        return written

    def _current(self, object_id: str) -> bytes | None:
        """What the file holds once the writes queued before this one are done (a person's edit aside)."""
        queued = self._queued.get(object_id)
        return queued if queued is not None else self.dir.read(f"{object_id}.toml")

    def _render(self, object_id: str, current: bytes | None, data: dict) -> bytes:
        if current is not None and object_id in self._unchecked:
            self._unchecked.discard(object_id)
            if self._untouched(current):  # nobody has touched it since the server wrote it: the fast writer may replace it
                self._written[object_id] = _digest(current)
        if current is None or _digest(current) == self._written.get(object_id):
            raw = tomlwrite.dumps({self.table: data}).encode()
            self._written[object_id] = _digest(raw)
            return raw
        self._written.pop(object_id, None)  # a person has been here: from now on, edit what they left
        return self._edited(object_id, current, data)

    def _put(self, conn: sqlite3.Connection, batch: _Batch) -> None:
        """In the writer thread: the files of a batch (the changes queued while the writer was busy), each
        in a temporary file fsynced, renamed, and the directory fsynced once for all; then their messages,
        in this job's transaction. A file that fails fails its own write only."""
        writes = batch.take()
        for item in writes:
            try:
                item.tmp = self.dir.prepare(item.name, item.raw)
            except OSError as exc:
                item.error = exc
        before = time.time_ns()  # the rows' date: a change after any rename, a person's, is later (remember_written)
        for item in writes:
            if item.error is None:
                try:
                    self.dir.put(item.tmp, item.name)
                    item.put = True
                except OSError as exc:
                    item.error = exc
        try:
            self.dir.sync()
        except OSError as exc:  # the renames may not survive a crash: none of them is answered as saved
            for item in writes:
                if item.put:
                    item.error = exc
            raise
        kill_point("history-message")  # tests: a crash with the files on disk and their messages not (history.py)
        if self._history is not None:
            for item in writes:
                if item.put and item.message:
                    self._history.keep(conn, item.message, f"{self.dir.path}/{item.name}")
        for item in writes:
            if item.put:  # on disk: the next start compares it with the row rather than parse it
                remember_written(conn, self.table, self.dir, item.name, item.raw, self._parse, before)

    def _settled(self, object_id: str, raw: bytes, message: str, error: OSError | None, written: bool,
                 settled: Callable[[OSError | None], None]) -> None:
        if self._queued.get(object_id) is raw:
            del self._queued[object_id]
        if error is not None and written:  # the file is on disk; its message is not: committed as recovered
            if self._history is not None:
                self._history.lost(message, error)
            error = None
        if error is not None:
            self._written.pop(object_id, None)  # the file holds what it held: look at it again at the next change
            self._unchecked.add(object_id)
        settled(error)

    def _untouched(self, raw: bytes) -> bool:
        """Exactly what the fast writer writes for the table it holds."""
        try:
            return tomlwrite.dumps({self.table: tomllib.loads(raw.decode())[self.table]}).encode() == raw
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
            return False

    def _edited(self, object_id: str, current: bytes, data: dict) -> bytes:
        try:
            doc = tomlkit.parse(current.decode())
            table = doc[self.table]
        except Exception as exc:  # tomlkit raises its own kinds; all mean the same here
            raise BrokenFile(0, f"{self.path(object_id)} was edited and no longer parses ({_why(exc, self.table)}); "
                                "fix it by hand: anvilfs will not overwrite it") from None
        for key, value in data.items():
            if table.get(key) != value:
                table[key] = value
        for key in [k for k in table if k not in data]:
            del table[key]
        return tomlkit.dumps(doc).encode()


class _Write:
    __slots__ = ("name", "raw", "message", "tmp", "put", "error")

    def __init__(self, name: str, raw: bytes, message: str):
        self.name, self.raw, self.message = name, raw, message
        self.tmp = ""
        self.put = False  # renamed into place (on disk once the directory is synced)
        self.error: OSError | None = None


class _Batch:
    """Writes that go to disk in one job; joined from the event loop until the writer thread takes it."""

    def __init__(self, first: _Write):
        self.writes = [first]
        self.commit: Commit | None = None
        self._taken = False
        self._lock = threading.Lock()

    def join(self, item: _Write) -> bool:
        with self._lock:
            if not self._taken:
                self.writes.append(item)
            return not self._taken

    def take(self) -> list[_Write]:
        with self._lock:
            self._taken = True
            return self.writes


class Written:
    """One write's outcome: on disk once its batch is committed, unless its own file failed."""

    __slots__ = ("_commit", "_item")

    def __init__(self, commit: Commit, item: _Write):
        self._commit, self._item = commit, item

    async def wait(self) -> None:
        try:
            await self._commit.wait()
        except OSError:
            if not self._item.put or self._item.error is not None:
                raise
            # its file is on disk and only its message was refused: the change is kept (committed as
            # recovered), so its request is not told that it failed
        if self._item.error is not None:
            raise self._item.error


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=16).digest()


def _why(exc: Exception, table: str) -> str:
    if isinstance(exc, KeyError):
        return f"no [{table}] table"
    if isinstance(exc, StorageError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "nested too deeply to read (arrays or tables inside each other hundreds of levels down)"
    return f"{type(exc).__name__}: {exc}"
