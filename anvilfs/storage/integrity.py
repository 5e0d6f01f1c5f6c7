"""Is the database file sound? SQLite's word on it: the errors that mean a damaged file, and a quick check
of the whole file that a stop can interrupt (the app runs it once clients are in: docs/design.md, "A
damaged database").

    if damaged(exc): print(damaged_text(exc, path))   # SQLite's corrupt and not-a-database codes only
    check = QuickCheck(path); problems = check.run()   # in a worker thread; check.stop() from any other
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

_DAMAGED = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (an extended code's low byte is its primary code)


def damaged(exc: BaseException) -> bool:
    """An error SQLite gives for a bad file (corrupt, or no database at all), not for a lock, a full disk or
    a bug in a statement."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in _DAMAGED


def damaged_text(exc: sqlite3.DatabaseError, path: str) -> str:
    """What to tell the user of a database that `damaged` says is bad."""
    return (f"the database {path} is damaged ({exc}); docs/using.md, \"A damaged database\", says how to keep "
            "what can be read")


class QuickCheck:
    """SQLite's quick_check of a database file: run() in a worker thread, stop() from any other.

    It reads the whole file (44 ms for 6 MB; seconds for one that keeps years of transcripts) without the
    interpreter's lock, on a read-only connection of its own that never writes or checkpoints (while it
    reads, the writer's checkpoints cannot pass it: the log grows). run() gives [] for a sound file,
    SQLite's findings for a damaged one, and None when it could not check (`failed` says why: a locked
    or unreadable file, a stop), which is never called damage. It raises nothing."""

    MOST = 10  # findings asked for: the first few say what is wrong, the rest would only be longer
    BUSY_SECONDS = 5.0  # how long it waits for a lock another process holds (a VACUUM) before it gives up

    def __init__(self, path: str):
        self.path, self.failed = path, ""
        self.done = threading.Event()  # set once no connection of its is open, nor will be: run() ended, or never ran
        self._lock = threading.Lock()  # run()'s connection and the two flags, against stop()
        self._conn: sqlite3.Connection | None = None
        self._began = self._stopped = False

    def run(self) -> list[str] | None:
        with self._lock:
            if self._stopped:  # stopped before its thread came to it: it never opens the file
                self.failed = "stopped"
                return None
            self._began = True
        try:
            return self._check()
        except Exception as exc:  # advisory: nothing here may take the server down
            self.failed = f"{type(exc).__name__}: {exc}"
            return None
        finally:
            self.done.set()

    def stop(self) -> None:
        """End a check under way (SQLite's interrupt, which ends even the walk of the b-trees, one step of
        SQLite's that a progress handler never sees: a stop 20 ms into a 471 MB file waited 0.2 s for it),
        or the one not yet begun: then `done` at once (a thread asked to run it may never have started: trio
        drops one cancelled before). Between the connection's opening and the statement's start, an
        interrupt does nothing; run() looks at the flag there too, so only a stop in the microseconds
        between that look and the statement waits for the check."""
        with self._lock:
            self._stopped = True
            if not self._began:
                self.done.set()
            elif self._conn is not None:
                self._conn.interrupt()  # SQLite allows it from any thread

    def _open(self) -> sqlite3.Connection:
        # a URI for mode=ro; as_uri() quotes the path's bytes as the file system has them ("?", "#", "%", not UTF-8)
        return sqlite3.connect(f"{Path(self.path).as_uri()}?mode=ro", uri=True, check_same_thread=False,
                               timeout=self.BUSY_SECONDS)

    def _check(self) -> list[str] | None:
        try:
            conn = self._open()
        except sqlite3.Error as exc:
            self.failed = str(exc)
            return None
        try:
            with self._lock:
                self._conn = conn
                stopped = self._stopped
            rows = [] if stopped else conn.execute(f"PRAGMA quick_check({self.MOST})").fetchall()
        except sqlite3.Error as exc:
            if damaged(exc):  # a header so bad that the check itself cannot begin
                return [str(exc)]
            self.failed = "stopped" if self._stopped else str(exc)
            return None
        finally:
            with self._lock:
                self._conn = None  # no interrupt once it is closed
            conn.close()
        if self._stopped:
            self.failed = "stopped"
            return None
        if rows == [("ok",)]:
            return []
        # a row may hold several lines, under a heading that names the schema ("*** in database main ***")
        return [line for row in rows for line in str(row[0]).splitlines() if line and not line.startswith("***")]
