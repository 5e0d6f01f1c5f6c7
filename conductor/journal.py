"""The conductor's durable record: what it is about to do, and what it has done.

    journal = Journal.open(state_dir, "review", digest, run=None)   # takes the lock, loads or starts
    await journal.begin(key, {"text": ...})   # on disk before the action (a group commit)
    journal.finish(key, result)         # on disk after it
    journal.done(key) / journal.pending(key)
    read_record(state_dir, "review")    # what it holds, for a test or a person (no lock taken)

One SQLite database per conductor name, `STATE/NAME.db`, 0600 in a 0700
directory, kept by the server's own storage module (anvilfs.storage
Database: WAL, synchronous=FULL, one writer thread). Its one table holds
the run's fields (digest, run id, backends, finished, halted) and each
step begun (its intent) or done (its result), a row each. A record is a
few rows, committed by the writer thread before the action it announces:
the begins of lanes that come together share one transaction and one
flush (group commit), while the event loop serves the other lanes. A
SIGKILL at any instant leaves the last commit, whole. `STATE/NAME.lock` is
held (flock) while a conductor runs: a second one of the same name is
refused, and a restarted one knows the killed one is gone.

A record of the format before (`STATE/NAME.json`, a snapshot, and the log
of the records since, `STATE/NAME.GEN.log`) is imported into the database
at the first open, and its files removed once the import is committed: a
kill in between leaves it to be imported again. One-way: the files are gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anvilfs.storage import PrivateDir, StorageError
from anvilfs.storage.database import Commit, Database

from . import crash
from .overrides import spelled

VERSION = 1
SCHEMA = """CREATE TABLE IF NOT EXISTS record (
    kind TEXT NOT NULL,   -- 'run' (a field of the run), 'pending' (a step begun) or 'done' (a step done)
    key TEXT NOT NULL,    -- the field's name or the step's key
    value TEXT NOT NULL,  -- JSON: the field's value, the step's intent or its result
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;"""
_ALL = "SELECT kind, key, value FROM record"



class JournalError(Exception):
    pass


class Journal:
    def __init__(self, store: _Store, data: dict[str, Any]):
        self.data, self._store = data, store
        self.path = Path(store.db.path)
        self.resumed_from: dict | None = None
        self.resumed = False  # this run's record was on disk already: it goes on after a kill or a halt
        self.replaced_run: str | None = None  # the run an --again replaced (finished or not)
        self._lazy: list[dict] = []  # records to go to disk with the next one

    @classmethod
    def open(cls, state_dir: Path, name: str, digest: str, *, run: str | None = None, again: bool = False,
             backends: dict[str, str] | None = None, override: list[str] | None = None) -> Journal:
        """`backends`: each session the run makes and its backend (after `override`, the --backend values)."""
        store = _Store.take(state_dir, name)
        try:
            _import_old(store.directory, state_dir, name, store.db)
            data = _load(store.db, store.db.path)
            other = _other_version(store.db.path, data, digest, backends or {}, override or [], again)
        except BaseException:
            store.close()
            raise
        resumed, replaced = data is not None, None
        if data is None or (again and (data.get("finished") or other)):
            resumed, replaced = False, data and data.get("run")
            data = {"version": VERSION, "name": name, "digest": digest, "run": run or secrets.token_hex(3),
                    "done": {}, "pending": {}, "finished": None}
        if _untouched(data) or "backends" not in data:  # nothing done yet, or a record from before --backend
            data["backends"], data["override"] = backends or {}, override or []
        journal = cls(store, data)
        journal.resumed = resumed
        journal.replaced_run = replaced or None  # its conductor is gone: this one holds the lock
        journal.resumed_from = data.pop("halted", None)  # a stop or interrupt before: this run goes on
        steps = not resumed  # a new run's record replaces the old one's steps; a resumed one keeps them
        try:
            store.db.call(lambda conn: _store_run(conn, data, steps=steps)).wait_blocking()
        except OSError as exc:
            store.close()
            raise JournalError(f"{store.db.path}: cannot write the conductor's record ({exc})") from None
        crash.point("record: start")
        return journal

    @property
    def run(self) -> str:
        return self.data["run"]

    @property
    def finished(self) -> dict | None:
        return self.data["finished"]

    def done(self, key: str) -> Any:
        return self.data["done"].get(key)

    def is_done(self, key: str) -> bool:
        return key in self.data["done"]

    def pending(self, key: str) -> dict | None:
        return self.data["pending"].get(key)

    async def begin(self, key: str, intent: dict) -> None:
        """Record a step begun, on disk when this returns (before the action it announces).

        The commit is made by the database's writer thread, and the begins of lanes that come together
        share one: the loop goes on serving the other lanes meanwhile.
        """
        entry = {"begin": key, "intent": intent}
        _apply(self.data, entry)
        commit = self._write(entry, f"begin {key}")
        commit.then(_passed(f"record: begin {key}"))  # in the loop, once on disk, even if this lane is cancelled
        await commit.wait()

    def finish(self, key: str, result: Any = True, *, lazy: bool = False) -> None:
        """Record a step done; `lazy` leaves it to go to disk with the next record.

        For steps that only look (wait, check, gate): lost to a crash, the
        step is done again with the same result, since nothing has acted
        since; the next action's record carries it to disk first. That
        saves the commits of two records per round on the path from a
        session's await to its next prompt. And for a prompt: lost, the step
        is begun and not done, and a restart looks for each prompt in its
        target's queue and log before it would send it again.
        """
        entry = {"finish": key, "result": result}
        if lazy:
            _apply(self.data, entry)
            self._lazy.append(entry)
        else:
            self._record(entry, f"done {key}")

    def halt(self, outcome: str, why: str) -> None:
        """Stopped or interrupted from outside: the run is not over, and `run` again resumes it."""
        self._record({"halt": {"outcome": outcome, "why": why}}, f"halt {outcome}")

    @property
    def halted(self) -> dict | None:
        return self.data.get("halted")

    def end(self, outcome: str, why: str) -> None:
        self._record({"end": {"outcome": outcome, "why": why}}, f"end {outcome}")

    def close(self) -> None:
        self._store.close()

    def _record(self, entry: dict, what: str) -> None:
        """A record on disk when this returns, after those on their way (the loop waits: a bead step's
        result, the run's end or halt, none of them on a lane's path from an await to its next prompt)."""
        _apply(self.data, entry)
        self._write(entry, what).wait_blocking()
        crash.point(f"record: {what}")

    def _write(self, entry: dict, what: str) -> Commit:
        """The record, after the lazy ones waiting, in one job of the writer's next transaction."""
        entries, self._lazy = [*self._lazy, entry], []

        def work(conn: sqlite3.Connection) -> None:
            crash.hold_begin(what)  # test-only: a begin held back before its commit
            for each in entries:
                _put_entry(conn, each)

        return self._store.db.call(work)


class _Store:
    """What a conductor holds while it runs: its lock, its directory and its database."""

    def __init__(self, directory: PrivateDir, lock_fd: int, db: Database):
        self.directory, self.lock_fd, self.db = directory, lock_fd, db

    @classmethod
    def take(cls, state_dir: Path, name: str) -> _Store:
        if not name or "/" in name or "\0" in name:
            raise JournalError(f"--name {name!r}: a conductor's name names its files in --state (NAME.db, "
                               "NAME.lock), so it is not empty and holds no '/'; give another --name")
        try:
            directory = PrivateDir(state_dir)
        except StorageError as exc:
            raise JournalError(f"{exc}") from None
        try:
            lock_fd = _lock(state_dir / f"{name}.lock", name)
        except BaseException:
            directory.close()
            raise
        try:
            return cls(directory, lock_fd, _database(directory, name))
        except BaseException:
            os.close(lock_fd)
            directory.close()
            raise

    def close(self) -> None:
        """Everything queued committed, then the lock let go: the next conductor finds it all."""
        self.db.close()
        os.close(self.lock_fd)
        self.directory.close()


def _database(directory: PrivateDir, name: str) -> Database:
    try:
        return Database(directory, f"{name}.db", SCHEMA)
    except StorageError as exc:
        raise JournalError(f"{exc}") from None


def read_record(state_dir: Path, name: str) -> dict | None:
    """The record of conductor `name` (None if there is none); one not imported yet is read where it is."""
    record = None
    if (state_dir / f"{name}.db").exists():
        directory = PrivateDir(state_dir)
        try:
            db = _database(directory, name)
            try:
                record = _load(db, db.path)
            finally:
                db.close()
        finally:
            directory.close()
    return record if record is not None else _read_old(state_dir, name)  # not imported yet, or none at all


def _load(db: Database, where: str) -> dict | None:
    """The record from its rows: None if it has no run yet."""
    data: dict[str, Any] = {"done": {}, "pending": {}}
    try:
        for kind, key, value in db.rows(_ALL):
            (data if kind == "run" else data[kind])[key] = json.loads(value)
    except (sqlite3.Error, ValueError, KeyError) as exc:
        raise JournalError(f"{where}: cannot read the conductor's record ({exc}); "
                           "move it away to start over") from None
    return data if "run" in data else None


def _import_old(directory: PrivateDir, state_dir: Path, name: str, db: Database) -> None:
    """The record of the format before, if there is one, into the database; then its files removed."""
    if not directory.exists(f"{name}.json"):
        return
    if _load(db, db.path) is None:  # else imported by a conductor killed before it removed the files
        data = _read_old(state_dir, name)
        if data is not None:
            data.pop("log", None)
            db.call(lambda conn: _store_run(conn, data, steps=True)).wait_blocking()
    crash.point("import: committed")
    n = re.escape(name)
    logs = re.compile(rf"{n}\.[0-9a-f]{{8}}\.log|\.{n}\.json\.[0-9a-f]{{16}}")  # and a temporary a kill left
    for file in directory.names():
        if logs.fullmatch(file):
            directory.remove(file)
    directory.remove(f"{name}.json")  # the last: while it is there, the import is not over


def _store_run(conn: sqlite3.Connection, data: dict, *, steps: bool) -> None:
    """The run's fields (a `halted` not in `data` removed); with `steps`, its steps too, replacing all."""
    if steps:
        conn.execute("DELETE FROM record")
        for kind in ("pending", "done"):
            conn.executemany("INSERT INTO record VALUES (?, ?, ?)",
                             [(kind, key, _json(value)) for key, value in data[kind].items()])
    conn.execute("DELETE FROM record WHERE kind = 'run'")
    conn.executemany("INSERT INTO record VALUES ('run', ?, ?)",
                     [(key, _json(value)) for key, value in data.items() if key not in ("pending", "done")])


def _put_entry(conn: sqlite3.Connection, entry: dict) -> None:
    """One record's rows: what `_apply` does to the record in memory."""
    if "begin" in entry:
        _put(conn, "pending", entry["begin"], entry["intent"])
    elif "finish" in entry:
        conn.execute("DELETE FROM record WHERE kind = 'pending' AND key = ?", (entry["finish"],))
        _put(conn, "done", entry["finish"], entry["result"])
    elif "halt" in entry:
        _put(conn, "run", "halted", entry["halt"])
    elif "end" in entry:
        _put(conn, "run", "finished", entry["end"])


def _put(conn: sqlite3.Connection, kind: str, key: str, value: Any) -> None:
    conn.execute("INSERT OR REPLACE INTO record VALUES (?, ?, ?)", (kind, key, _json(value)))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _passed(label: str) -> Callable[[OSError | None], None]:
    def point(error: OSError | None) -> None:
        if error is None:
            crash.point(label)
    return point


def _other_version(path: str, data: dict | None, digest: str, backends: dict[str, str], override: list[str],
                   again: bool) -> bool:
    """Whether the record's run began with another workflow file, or made its sessions on other backends
    (another --backend): refused (JournalError) unless `again`, which then starts a new run. A finished run
    is only reported, whatever the backends."""
    if data is None:
        return False
    if data.get("digest") != digest:
        if not again:
            raise JournalError(f"{path}: this run began with another version of the workflow file; "
                               "restore that file to resume, or give --again to start a new run")
        return True
    if data.get("finished") or data.get("backends", backends) == backends or _untouched(data):
        return False
    if not again:
        # a resume with other backends would mix them: the sessions made so far are on the old ones
        raise JournalError(f"{path}: run {data.get('run')} began {spelled(data.get('override', []))}, making its "
                           f"sessions on {_listed(data['backends'])}; this one ({spelled(override)}) would make "
                           f"them on {_listed(backends)}. Give the same --backend to resume it, or --again to "
                           "start a new run")
    return True


def _untouched(data: dict) -> bool:
    """A run with no step begun (refused at its start, say): it takes the backends it is run with now. The
    sessions a run makes are not steps: one made on other backends is refused (sessions.check_existing)."""
    return not data.get("finished") and not data["done"] and not data["pending"]


def _listed(backends: dict[str, str]) -> str:
    return ", ".join(f"{name}={backend}" for name, backend in sorted(backends.items())) or "none"


def _lock(path: Path, name: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise JournalError(f"another conductor named {name!r} is running (it holds {path}); "
                           "stop it first, or give this one another --name") from None
    return fd


def _apply(data: dict, entry: dict) -> None:
    if "begin" in entry:
        data["pending"][entry["begin"]] = entry["intent"]
    elif "finish" in entry:
        data["pending"].pop(entry["finish"], None)
        data["done"][entry["finish"]] = entry["result"]
    elif "halt" in entry:
        data["halted"] = entry["halt"]
    elif "end" in entry:
        data["finished"] = entry["end"]


def _read_old(state_dir: Path, name: str) -> dict | None:
    """A record of the format before the database: the snapshot `NAME.json` with the log it names replayed,
    one JSON line a record (a torn last one was never synced, and its action never begun)."""
    path = state_dir / f"{name}.json"
    try:
        data = json.loads(path.read_text()) if path.exists() else None
        lines = (state_dir / data["log"]).read_bytes().split(b"\n") if data is not None and data.get("log") else []
    except FileNotFoundError:
        lines = []
    except (OSError, ValueError) as exc:
        raise JournalError(f"{path}: cannot read the conductor's record ({exc}); move it away to start over") from None
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line) if line else None
        except ValueError:
            if number == len(lines):
                break
            raise JournalError(f"{state_dir / data['log']}:{number}: a broken line; "
                               "move the conductor's files away to start over") from None
        if entry is not None:
            _apply(data, entry)
    return data
