"""What each TOML file of a directory parsed to, kept in STATE/anvilfs.db: a start parses only what changed.

    files = ParsedFiles(db, "bead")                      # the rows kept for this kind, read once
    table = files.table(directory, "x.toml", parse)    # parse(raw), or what the row says it gives
    files.finish()                                     # rows of new and changed files queued, of gone ones dropped
    remember_written(conn, kind, directory, name, raw, parse)  # the writer: the row of a file it just put

A start used to parse every file: 10,000 beads, most of a restart (benchmarks/history.md). Now it parses
those that changed behind the server's back: the writer makes the row of each file the server writes, in
the job that writes it (a row racy by its making, so checked against the bytes, below). The files stay
the truth: a row is only ever a shortcut to what parsing the file would give, and anything doubtful about
one (its file changed, it is racy and its bytes differ, it does not decode, its checksum is wrong, the
table has another layout) sends the start back to the file, and to its bytes first: a file whose bytes
are still those the row was made from (their digest) is not parsed, whatever its stat says (a copy of
the state has other inodes and times). Losing the table, or a row, costs a parse, never a wrong answer.
A file that is not a regular 0600 file of ours takes the checked read, always.

What a row is trusted on: the file's (size, mtime_ns, ctime_ns, inode) when the row was made. Every
change of content gives a new ctime (the kernel sets it on each write, rename over, chmod; no user can
set it back as `touch -d` or os.utime sets mtime back), and `git checkout` or an editor's save writes a
new inode. What that misses is git's "racy" case: a filesystem's clock ticks coarsely (a jiffy, 1-10 ms,
on ext4, xfs and tmpfs; seconds on some others), so a file written again within the tick its row was
made in keeps its ctime, and with the same size it looks unchanged. So a row made less than RACY_NS
after its file's ctime is not trusted by the stat alone: the file is read again and its bytes compared
with the digest kept in the row (cheaper than a parse), and the row made again, trusted once old enough.
So is a row made before the machine last started (a power cut: booted_ns).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import stat
import time
import zlib
from collections.abc import Callable
from typing import Any

from ..faults import kill_point
from .database import Database
from .private import PrivateDir

log = logging.getLogger("anvilfs.storage")

# A new layout of the rows gets a new name: a table of an older one is dropped and made again (a start
# that cannot read the table takes it as empty and rebuilds it).
TABLE = "toml_parsed_v1"
_CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (kind TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL, "
           "mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, seen_ns INTEGER NOT NULL, "
           "digest BLOB NOT NULL, parsed TEXT NOT NULL, seal INTEGER NOT NULL, PRIMARY KEY (kind, name)) WITHOUT ROWID")
_COLUMNS = "name, size, mtime_ns, ctime_ns, ino, seen_ns, digest, parsed, seal"
_PUT = f"INSERT OR REPLACE INTO {TABLE} (kind, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"  # a _row
_DROP = f"DELETE FROM {TABLE} WHERE kind = ? AND name = ?"
RACY_NS = 2_000_000_000  # far above any local filesystem's tick, and a clock a little behind the disk's


class ParsedFiles:
    """The rows of one kind of file, for one start: used, checked or replaced file by file, then saved."""

    def __init__(self, db: Database, kind: str):
        self.kind = kind
        self._db = db
        self._now = time.time_ns()  # before every stat of this start: a row is never dated later than its file's look
        self._booted = booted_ns()
        self._rebuild = False
        self._fresh: list[tuple] = []  # rows made this start
        self._stale: list[str] = []  # names whose rows are wrong (corrupt, or their files broken or not plain)
        self._rows = self._read()
        self.cached = self.checked = self.parsed = 0  # files taken from a row, from a row after their bytes, parsed

    def table(self, directory: PrivateDir, name: str, parse: Callable[[bytes], Any]) -> Any:
        """What parse(the file's bytes) gives: from the row while the file is what the row was made from."""
        row = self._rows.pop(name, None)
        try:
            return self._take(directory, name, row, parse)
        except Exception:  # a file gone bad (it raises again at every start): its row goes
            if row is not None:
                self._stale.append(name)
            raise

    def _take(self, directory: PrivateDir, name: str, row: _Row | None, parse: Callable[[bytes], Any]) -> Any:
        info, raw = directory.lstat(name), None
        key = _key(info) if info is not None and _plain(info) else None
        if row is not None and key is not None:
            if row.key == key and row.settled and (value := row.value()) is not _NONE:
                self.cached += 1
                return value
            # racy, or changed to the stat: the bytes the row was made from, or a parse. A copy of the state
            # (another inode, other times), or the same text checked out again, has the same bytes
            raw = directory.read(name)
            if raw is not None and _digest(raw) == row.digest and (value := row.value()) is not _NONE:
                self.checked += 1
                self._fresh.append(_row(self.kind, name, key, self._now, row.digest, row.parsed))
                return value
        if raw is None:
            raw = directory.read(name) or b""  # a link or another user's file raises: broken, as without rows
        value = parse(raw)
        self.parsed += 1
        self._remember(name, key, raw, value, had_row=row is not None)
        return value

    def finish(self) -> None:
        """Queue the rows made this start and the deletion of the rows of files gone (the writer's job: a start
        never waits for it; killed before it commits, the next start parses those files again)."""
        stale, fresh, rebuild = self._stale + list(self._rows), self._fresh, self._rebuild
        log.info("%s files: %d taken from %s, %d after a look at their bytes, %d parsed", self.kind,
                 self.cached, TABLE, self.checked, self.parsed)
        if stale or fresh or rebuild:
            self._db.call(lambda conn: _save(conn, self.kind, stale, fresh, rebuild), answer=False)

    def _remember(self, name: str, key: tuple | None, raw: bytes, value: Any, *, had_row: bool) -> None:
        text = _text(value)
        if key is None or text is None:
            if had_row:
                self._stale.append(name)
            return
        self._fresh.append(_row(self.kind, name, key, self._now, _digest(raw), text))

    def _read(self) -> dict[str, _Row]:
        try:
            rows = self._db.read(f"SELECT {_COLUMNS} FROM {TABLE} WHERE kind = ?", (self.kind,))
        except sqlite3.Error:  # none yet, or one of an older layout: every file is parsed, the table made anew
            self._rebuild = True
            return {}
        found = {}
        for fields in rows:
            row = _Row.of(self.kind, fields, self._booted, self._now)
            if row is not None:
                found[row.name] = row
            else:
                self._stale.append(fields[0])  # a corrupt row: ignored, and replaced or dropped at finish
        return found


_NONE = object()  # what a row's value() gives when its text does not decode


class _Row:
    __slots__ = ("name", "key", "digest", "parsed", "settled")

    def __init__(self, name: str, key: tuple, digest: bytes, parsed: str, settled: bool):
        self.name, self.key, self.digest, self.parsed, self.settled = name, key, digest, parsed, settled

    @classmethod
    def of(cls, kind: str, fields: tuple, booted: int, now: int) -> _Row | None:
        """A row read from the table, or None if it is not one this module wrote (corrupt, or changed since)."""
        name, size, mtime, ctime, ino, seen, digest, parsed, seal = fields
        key = (size, mtime, ctime, ino)
        if not (isinstance(name, str) and all(type(v) is int for v in (*key, seen)) and isinstance(parsed, str)
                and isinstance(digest, bytes) and seal == _seal(kind, name, key, seen, digest, parsed)):
            return None
        # trusted on its stat alone only if its file had not changed for RACY_NS when the row was made, in
        # this boot of the machine (see booted_ns)
        return cls(name, key, digest, parsed, settled=ctime < seen - RACY_NS and booted < seen <= now)

    def value(self) -> Any:
        try:
            return json.loads(self.parsed)
        except (ValueError, RecursionError):
            return _NONE


def _save(conn: sqlite3.Connection, kind: str, stale: list[str], fresh: list[tuple], rebuild: bool) -> None:
    """In the writer thread, in one transaction: the table (anew if it could not be read), the rows."""
    if rebuild:
        try:  # the other kind's start may have made it anew already: its rows stay
            conn.execute(f"SELECT kind, {_COLUMNS} FROM {TABLE} LIMIT 0")
        except sqlite3.Error:
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute(_CREATE)
    conn.executemany(_DROP, [(kind, name) for name in stale])
    kill_point("parse-cache")  # tests: a crash in the middle of this write (nothing of it committed)
    conn.executemany(_PUT, fresh)


def remember_written(conn: sqlite3.Connection, kind: str, directory: PrivateDir, name: str, raw: bytes,
                     parse: Callable[[bytes], Any], before: int) -> None:
    """In the writer thread, in the job that put `raw` in place as `name`: its row, so that the next start
    compares the file's bytes with it instead of parsing it. Without this, a restart after the server had
    changed most of its files parsed them all, as a first start does: 0.7 s of a 1.9 s restart with 11,000
    (benchmarks/history.md). The row is dated `before`, a time_ns taken before the rename that put the
    file in place, not when the row is made: the stat below may already be of a person's edit made after
    the rename, and that edit's ctime is then later than the row's date, however long the job took after
    the rename (its fsync, a big batch), so the row is racy and a start compares the file's bytes with
    `raw`'s and parses the edit. A file nobody touched since is the temporary file the writer wrote and
    renamed, so its row is right whatever its date makes of it. What cannot be made a row (a file not
    plain, a value JSON cannot hold) drops the file's old row. An error here leaves the old row, made
    from other bytes than the file's now (so it gives a parse), and does not fail the write, unless
    SQLite rolled back the whole transaction."""
    try:
        info = directory.lstat(name)
        text = None
        if info is not None and _plain(info):
            try:
                text = _text(parse(raw))
            except Exception:  # what the start's parse refuses too: no row
                text = None
        if text is None:
            conn.execute(_DROP, (kind, name))
        else:
            conn.execute(_PUT, _row(kind, name, _key(info), before, _digest(raw), text))
    except (OSError, sqlite3.Error) as exc:  # no table yet (the first start's finish makes it), a full disk
        if not conn.in_transaction:
            raise  # SQLite rolled the whole group back (a full disk): its jobs fail, as they would have (database.py)
        log.debug("no parse-cache row for %s/%s: %s", kind, name, exc)


def booted_ns() -> int:
    """When the machine started, on the wall clock (0 where the system does not say). A power cut can leave
    a file's new bytes on disk without its new times (ext4 writes an overwritten block in place, its
    inode's times with the next journal commit): a row made before the machine's last start is checked
    against its file's bytes, as a racy one is, before it is trusted again."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.time_ns() - time.clock_gettime_ns(boottime) if boottime is not None else 0


def _row(kind: str, name: str, key: tuple, seen: int, digest: bytes, parsed: str) -> tuple:
    return (kind, name, *key, seen, digest, parsed, _seal(kind, name, key, seen, digest, parsed))


def _seal(kind: str, name: str, key: tuple, seen: int, digest: bytes, parsed: str) -> int:
    """A checksum of the row: a row changed in any field (a bad sector, a hand in the database) is not used."""
    head = f"{kind}\0{name}\0{key}\0{seen}\0".encode()
    return zlib.crc32(parsed.encode(), zlib.crc32(digest, zlib.crc32(head)))


def _text(value: Any) -> str | None:
    """What a row keeps of a parsed table, or None where JSON cannot hold it (a TOML date, a NaN, arrays
    nested deep): such a file has no row."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=16).digest()


def _key(info: os.stat_result) -> tuple:
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


def _plain(info: os.stat_result) -> bool:
    """A file the read path would take as it is: regular, ours, 0600 (any other goes through that path)."""
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o600
