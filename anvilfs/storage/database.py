"""One SQLite database: every change committed by one writer thread, in groups, before it is answered.

    db = Database(state_dir, "anvilfs.db", SCHEMA)   # opened (and made) at start, in the caller's thread
    commit = db.execute("INSERT INTO mail VALUES (?, ?)", (id, text))   # queued; returns at once
    commit = db.call(lambda conn: ...)        # any work on the writer's connection, in one transaction
    commit = db.call(write_a_file, barrier=True)   # alone, in order: what came before is committed first
    await commit.wait()                       # in the event loop: once it is on disk (or raises OSError)
    db.read("SELECT ...")                     # reads, in the caller's thread: they never flush
    db.flush()  /  db.close()                 # a clean stop: everything queued committed, the writer gone

Why one thread: a commit with synchronous=FULL ends in an fsync of the
write-ahead log, and an fsync can take milliseconds; in the event loop it
would hold up every client. The writer takes everything queued since its
last commit and commits it as one transaction (group commit), so a hundred
prompts that arrive together cost one flush, not a hundred. Each change's
Commit is settled in the event loop (through the trio token of the task
that queued it) only after that transaction is on disk; a change that
fails (a constraint, a full disk) fails its own Commit with an OSError and
leaves the others of its group committed (each job runs in a savepoint).

A `call` marked `barrier` (a file written in order with the transactions:
a bead's TOML file) is a step of its own: what was queued before it is committed first, what is
queued after it waits for it. That is how a bead's TOML file and the
record that follows it keep their order.

WAL mode: readers (the caller's own connection) see the last commit and
never wait for the writer. The database file and its `-wal` and `-shm`
companions are checked before SQLite opens them (SQLite follows symbolic
links): each is absent or a regular 0600 file of this user.
"""

from __future__ import annotations

import collections
import errno
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any

import trio

from ..waitable import answer_after
from .integrity import damaged, damaged_text
from .private import PrivateDir, StorageError, checked_file

log = logging.getLogger("anvilfs.storage")
_COMPANIONS = ("", "-wal", "-shm", "-journal")
_SQLITE_ERRNO = {sqlite3.SQLITE_FULL: errno.ENOSPC, sqlite3.SQLITE_READONLY: errno.EROFS,
                 sqlite3.SQLITE_PERM: errno.EACCES} if hasattr(sqlite3, "SQLITE_FULL") else {}


class Commit:
    """Done once the change it stands for is on disk, or failed with an OSError (`error`)."""

    __slots__ = ("error", "result", "_event", "_done", "_then", "_token")

    def __init__(self, token: trio.lowlevel.TrioToken | None) -> None:
        self.error: OSError | None = None
        self.result: Any = None  # what a `call` returned
        self._token = token
        self._event = trio.Event() if token is not None else None
        self._done = threading.Event()
        self._then: list[Callable[[OSError | None], None]] = []

    @property
    def settled(self) -> bool:
        """Settled in the event loop (its `then` callbacks have run)."""
        return self._event.is_set() if self._event is not None else self._done.is_set()

    def then(self, fn: Callable[[OSError | None], None]) -> None:
        """fn(error or None) in the event loop once it is settled, before any waiter wakes."""
        if self.settled:
            fn(self.error)
        else:
            self._then.append(fn)

    async def wait(self) -> None:
        """Until it is on disk; raises the OSError if it failed."""
        await self._event.wait()
        if self.error is not None:
            raise self.error

    def wait_blocking(self, timeout: float | None = None) -> None:
        """The same for code outside the event loop (a clean stop, a start-up import)."""
        if not self._done.wait(timeout):
            raise TimeoutError("the database's writer did not finish in time")
        if self.error is not None:
            raise self.error

    def _finish(self, error: OSError | None, result: Any = None) -> None:
        """In the writer thread: hand the outcome to the event loop (or settle here, without one)."""
        self.error, self.result = error, result
        self._done.set()
        if self._token is None:
            self._settle()
            return
        try:
            self._token.run_sync_soon(self._settle)
        except trio.RunFinishedError:  # the loop is gone: nobody waits in it any more
            self._settle()

    def _settle(self) -> None:
        for fn in self._then:
            try:
                fn(self.error)
            except Exception:  # through run_sync_soon a raise would end the whole event loop, not one request
                log.exception("a callback of a database commit failed")
        self._then.clear()
        if self._event is not None:
            self._event.set()


class _Job:
    __slots__ = ("work", "commit", "barrier")

    def __init__(self, work: Callable[[sqlite3.Connection], Any], commit: Commit, barrier: bool):
        self.work, self.commit, self.barrier = work, commit, barrier


class Database:
    """One database file in a private directory, its writer thread, and a connection for reads."""

    def __init__(self, directory: PrivateDir, name: str, schema: str = ""):
        self.path = os.path.join(directory.path, name)
        for suffix in _COMPANIONS:  # SQLite would follow a link planted under any of these names
            checked_file(directory, name + suffix, create=suffix == "")
        self._jobs: collections.deque[_Job] = collections.deque()
        self._wake = threading.Condition()
        self._closing = False
        self.commits = 0  # transactions committed: how many groups the changes went to disk in
        opened: list[BaseException | sqlite3.Connection] = []
        ready = threading.Event()
        # the writer opens the database itself: making the schema writes and flushes, never in the caller's thread
        self._thread = threading.Thread(target=self._work, args=(schema, opened, ready), name=f"anvilfs-db:{name}",
                                        daemon=True)
        self._thread.start()
        ready.wait()
        if not isinstance(opened[0], sqlite3.Connection):
            self._thread.join()
            if damaged(opened[0]):  # its first page (the schema): using.md's recovery keeps what can be read
                raise StorageError(errno.EIO, damaged_text(opened[0], self.path))
            raise StorageError(errno.EIO, f"cannot use the database {self.path}: {opened[0]}; move it away "
                                          "(anvilfs makes a new one) or restore it from a backup")
        self._writer = opened[0]
        self._reader = _connect(self.path)

    # ------------------------------------------------------------ queueing changes

    def execute(self, sql: str, params: Iterable = ()) -> Commit:
        return self.call(lambda conn: conn.execute(sql, tuple(params)).rowcount)

    def executemany(self, sql: str, rows: Iterable[Iterable]) -> Commit:
        rows = [tuple(r) for r in rows]  # taken now: the caller may change its lists after
        return self.call(lambda conn: conn.executemany(sql, rows).rowcount)

    def call(self, work: Callable[[sqlite3.Connection], Any], *, barrier: bool = False, answer: bool = True) -> Commit:
        """`work(connection)` in the writer thread, in a transaction with whatever else is waiting (alone, when
        `barrier`: what came before is committed first, and what comes after waits for it). Never blocks.
        `answer=False`: the request being handled does not wait for this Commit (the caller gives it what to
        wait for itself)."""
        commit = Commit(_current_token())
        with self._wake:
            if self._closing:
                raise StorageError(errno.EIO, f"the database {self.path} is closed")
            self._jobs.append(_Job(work, commit, barrier))
            self._wake.notify()
        if answer:
            answer_after(commit)  # the request that made this change, if any, is answered once it is on disk
        return commit

    # ------------------------------------------------------------ reading

    def read(self, sql: str, params: Iterable = ()) -> list[tuple]:
        """Rows as of the last commit; in the caller's thread (a read never flushes)."""
        return self._reader.execute(sql, tuple(params)).fetchall()

    def rows(self, sql: str, params: Iterable = ()) -> Iterable[tuple]:
        """The same, as a cursor to iterate over without holding every row at once."""
        return self._reader.execute(sql, tuple(params))

    # ------------------------------------------------------------ life

    def flush(self, timeout: float | None = None) -> None:
        """Block until everything queued so far is committed (a clean stop; tests)."""
        if self._thread.is_alive():
            self.call(lambda conn: None, barrier=True).wait_blocking(timeout)

    def close(self) -> None:
        """Commit what is queued, stop the writer, close both connections. Safe twice.

        The reader goes first: the last connection to close checkpoints the write-ahead log into the
        database and fsyncs it, and that must be the writer, in its thread, not the event loop's."""
        self._reader.close()
        with self._wake:
            self._closing = True
            self._wake.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()

    # ------------------------------------------------------------ the writer thread

    def _open(self, schema: str) -> sqlite3.Connection:
        conn = _connect(self.path)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            if schema:
                conn.executescript(schema)
        except BaseException:
            conn.close()
            raise
        return conn

    def _work(self, schema: str, opened: list, ready: threading.Event) -> None:
        try:
            opened.append(self._open(schema))
        except Exception as exc:  # handed to the caller, who raises it as a StorageError
            opened.append(exc)
            return
        finally:
            ready.set()
        try:
            while True:
                with self._wake:
                    while not self._jobs and not self._closing:
                        self._wake.wait()
                    if not self._jobs:
                        return
                    group = _take_group(self._jobs)
                self._commit_group(group)
        finally:
            self._writer.close()

    def _commit_group(self, group: list[_Job]) -> None:
        """One transaction for the group (a savepoint per job, so one failure fails only its own job)."""
        done: list[tuple[_Job, Any]] = []
        try:
            self._writer.execute("BEGIN IMMEDIATE")
            for job in group:
                outcome = self._run_job(job)
                if outcome is not None:
                    done.append(outcome)
            self._writer.execute("COMMIT")
            self.commits += 1
        except Exception as exc:  # BEGIN refused (a lock held elsewhere), a full disk, COMMIT refused
            _rollback(self._writer)
            failure = _as_oserror(exc, self.path)
            for job in group:  # every one not settled yet, run or not: none of them is on disk
                if not job.commit._done.is_set():
                    job.commit._finish(failure)
            return
        for job, result in done:
            job.commit._finish(None, result)

    def _run_job(self, job: _Job) -> tuple[_Job, Any] | None:
        self._writer.execute("SAVEPOINT job")
        try:
            result = job.work(self._writer)
        except Exception as exc:  # a bug in one job must not stop the thread, and every other Commit with it
            if not self._writer.in_transaction:  # SQLite rolled the whole group back (SQLITE_FULL): it fails
                raise
            self._writer.execute("ROLLBACK TO job")
            self._writer.execute("RELEASE job")
            job.commit._finish(_as_oserror(exc, self.path))
            return None
        self._writer.execute("RELEASE job")
        return job, result


def _take_group(jobs: collections.deque[_Job]) -> list[_Job]:
    """The jobs that commit together: all up to a barrier, or a barrier alone."""
    if jobs[0].barrier:
        return [jobs.popleft()]
    group = []
    while jobs and not jobs[0].barrier:
        group.append(jobs.popleft())
    return group


def _connect(path: str) -> sqlite3.Connection:
    # isolation_level=None: the writer says BEGIN and COMMIT itself; check_same_thread: made here, used there
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # no transaction was open (BEGIN itself failed)


def _as_oserror(exc: Exception, path: str) -> OSError:
    if isinstance(exc, OSError):
        return exc
    if not isinstance(exc, sqlite3.Error):
        return OSError(errno.EIO, f"internal error in a write to {path}: {type(exc).__name__}: {exc}")
    code = _SQLITE_ERRNO.get(getattr(exc, "sqlite_errorcode", None), errno.EIO)
    return OSError(code, f"{exc} (database {path})")


def _current_token() -> trio.lowlevel.TrioToken | None:
    try:
        return trio.lowlevel.current_trio_token()
    except RuntimeError:  # not in the event loop (a start-up import, a command-line tool)
        return None
