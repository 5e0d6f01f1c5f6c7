"""The git history of the state directory: every durable change committed, with its message, in groups.

A bead's or convoy's change reaches the disk in two steps, one job of the
database's writer thread (database.py), in this order:

    1. its file       the TOML file, written atomically and fsynced (TomlObjects.write)
    2. its message    a row of history_pending, committed in STATE/anvilfs.db (`keep`)

and the request that made it is answered only after both. ``run`` commits
soon after, grouping what came in a short moment, because one git add +
commit costs far more than a durable write:

    commit     read the pending rows 1..N; `git add` the files they changed (the tracked directories
               whole at the first round, after a failed one, and every SCAN_EVERY seconds);
               commit their messages (GitRepository.commit_index) with the trailer "Anvilfs-Batch: <db id>.<N>";
               flush the directory of the branch's ref (git renames the ref into
               place last and flushes no directory); then delete rows 1..N

What a restart finds, wherever the server died (no message is lost, none
committed twice):

    between 1 and 2      a file no message covers: committed at start as
                         recovered (RECOVERED); its request was never answered
    after 2              pending rows: committed at start with their messages
    after the git commit, before the delete
                         the last commit's trailer names this database and N:
                         rows up to N are deleted, not committed again

A message whose file is not on disk cannot be: the row is written after the
file in the same job, and a file write that fails fails the job (its row is
rolled back with it). A hand edit is committed as recovered too.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
from collections.abc import Callable

import trio

from ..journal import one_line
from ..waitable import Changes
from .database import Commit, Database
from .gitrepo import GitFailed, GitRepository
from .history_import import COMMITTING, JOURNAL, import_journal, move_imported
from .private import PrivateDir, ensure_private_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS history_pending (seq INTEGER PRIMARY KEY AUTOINCREMENT, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
BATCH_TRAILER = "Anvilfs-Batch: "
RECOVERED = "Recovered: changes no message was recorded for (a server stopped before recording them, or a hand edit)"
_SUBJECT_MAX = 120  # of a grouped commit's subject; every message is in the body anyway
# Temporary files of PrivateDir.write_atomic in progress while git scans the directory.
_NOT_STATE = ":(exclude)*/.*.tmp"
# A round `git add`s only the files its messages changed: a scan of the tracked directories stats every file
# (11 of its 22 ms on 10,000 beads, each round: issue 32 item 6). A whole scan still runs at the first round
# (what a stopped server left), after a failed round, and at the first round this many seconds after the last
# scan: a file edited by hand is committed (as recovered, or with the next message) within that.
SCAN_EVERY = 30.0


class GitHistory:
    """The state directory as a git repository: changes committed in groups, each with its message.

    A change's message is kept by ``keep`` inside the writer-thread job that
    wrote its file (or by ``record`` alone); ``follow`` that job's Commit.
    Run ``run`` as a task; ``flush`` before a clean stop (a cancelled git may
    leave a lock file, which the next start removes).
    """

    def __init__(self, root: PrivateDir, db: Database, tracked: tuple[str, ...] = ("beads", "convoys"), *,
                 on_error: Callable[[str], None] = lambda text: None,
                 group_delay: float = 0.1, retry_delay: float = 1.0, lock_timeout: float = 10.0):
        self._root = root
        self._db = db
        self._tracked = tuple(_check_tracked(name) for name in tracked)
        self._repo = GitRepository(root, lock_timeout=lock_timeout)  # first: a refused start changes nothing
        self._make_tracked_dirs()
        self._on_error = on_error
        self._group_delay = group_delay
        self._retry_delay = retry_delay
        self._id = ""  # this database's, in batch trailers: a new database never takes an old one's batches
        self._head_checked = False  # rows the last commit holds already are deleted before the next commit
        self._recorded = 0  # messages queued (their jobs followed) by this object
        self._in_round = 0  # of those, how many the commit under way holds
        self._committed = 0  # of those, how many are in history
        self._commits = Changes()
        self._wanted = trio.Event()
        self._lock = trio.Lock()  # one git at a time: they share the index
        self._paths: dict[int, str] = {}  # a pending row's seq -> the file its change wrote (set by the writer thread)
        self._paths_lock = threading.Lock()
        self._scanned_at: float | None = None  # trio time of the last whole scan; None: the next round scans
        self._imported: list[str] = []  # an older anvilfs's journal files, imported, still to be moved aside
        self._move_said = False  # a refused move is said once

    @property
    def stale_locks_removed(self) -> tuple[str, ...]:
        """git lock files (relative to .git) that a killed git had left, removed at start."""
        return self._repo.stale_locks_removed

    def close(self) -> None:
        self._repo.close()

    # ------------------------------------------------------------ recording

    def keep(self, conn: sqlite3.Connection, message: str, path: str = "") -> None:
        """In the writer thread, in the job that wrote the change's file (at `path`, if it wrote one): its
        message, pending."""
        seq = conn.execute("INSERT INTO history_pending (message) VALUES (?)", (one_line(message),)).lastrowid
        with self._paths_lock:  # a rolled-back row's seq comes again: its path must not stay for this row
            if path:
                self._paths[seq] = os.path.relpath(path, self._root.path)
            else:
                self._paths.pop(seq, None)  # none named: the round scans

    def follow(self, commit: Commit) -> None:
        """The Commit of a job that called ``keep``: once settled, the message waits for git."""
        self._recorded += 1
        self._wanted.set()  # now, not once on disk: a round that began since takes it (it waits for the queue)
        commit.then(self._kept)

    def record(self, message: str, path: str = "") -> Commit:
        """A message alone (its change's file, at `path` if given, written already), committed soon after it is
        on disk."""
        commit = self._db.call(lambda conn: self.keep(conn, message, path))
        self.follow(commit)
        return commit

    def lost(self, message: str, error: OSError) -> None:
        """A change whose file is on disk but whose message the database refused: said, and committed as recovered."""
        self._on_error(f"history: cannot keep the message {message!r} ({error.strerror or error}); the change "
                       "is saved and will be committed without it")
        self._scanned_at = None  # its file is found by a whole scan

    def _kept(self, error: OSError | None) -> None:
        if error is not None:
            self._scanned_at = None
            self._wanted.set()  # a failed job may still have left its file: committed as recovered

    # ------------------------------------------------------------ running

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Commit what a stopped server left pending, then commit soon after every record, for ever."""
        ok = await self._commit_reporting()
        task_status.started()
        took = 0.0
        while True:
            if ok:
                await self._wanted.wait()
                # Let a burst of changes share one commit; and under a steady stream of them, wait as long
                # as the last round took (a second at most), so that git is busy half the time at most (on
                # 10,000 beads, with a change every 50 ms, a round every 0.1 s kept git on one core of two:
                # issue 32 item 6).
                await trio.sleep(max(self._group_delay, min(took, 1.0)))
            else:
                await trio.sleep(self._retry_delay)  # git failed (disk full?): the rows wait
            began = trio.current_time()
            ok = await self._commit_reporting()
            took = trio.current_time() - began

    async def flush(self) -> None:
        """Commit everything recorded so far, now (git as any task, not in the background: a stop waits for
        it); StorageError if git fails (nothing is lost then either)."""
        await self._commit_pending(urgent=True)

    async def wait_committed(self) -> None:
        """Return once every change recorded so far is in history."""
        target, version = self._recorded, self._commits.version
        while self._committed < target:
            version = await self._commits.wait_changed(version)

    # ------------------------------------------------------------ committing

    async def _commit_reporting(self) -> bool:
        try:
            await self._commit_pending()
            return True
        except OSError as exc:
            self._on_error(f"history: {exc}; will retry (the messages wait in {self._db.path})")
            return False

    async def _commit_pending(self, urgent: bool = False) -> None:
        async with self._lock:
            self._repo.urgent = urgent
            try:
                if not self._id:
                    await self._start()
                await self._move_imported()
                if not self._head_checked:
                    await self._drop_committed()
                # Records from here on wake the next round. The event run() may be waiting on is set: after a
                # flush, run() waited on an event no record would set again, and history stopped for good.
                stale, self._wanted = self._wanted, trio.Event()
                stale.set()
                self._in_round = self._recorded
                await self._db.call(lambda conn: None, barrier=True).wait()  # those recorded so far are in the table
                rows = self._db.read("SELECT seq, message FROM history_pending ORDER BY seq")
                await self._add(self._changed_paths([seq for seq, _ in rows]))
                await self._commit(tuple(m for _, m in rows), f"{self._id}.{rows[-1][0]}" if rows else "")
                if rows:
                    await self._db.execute("DELETE FROM history_pending WHERE seq <= ?", (rows[-1][0],)).wait()
                    with self._paths_lock:
                        for seq in [seq for seq in self._paths if seq <= rows[-1][0]]:
                            del self._paths[seq]
            except BaseException:
                self._head_checked = False  # git may have committed what is still pending
                self._scanned_at = None  # and what a failed add or commit left is found by a whole scan
                raise
            finally:
                self._repo.urgent = False
        self._committed = self._in_round
        self._commits.bump()

    async def _start(self) -> None:
        """This database's id (made once), and the messages of a journal an older anvilfs left. The id is
        kept only once both are in the database: a round runs this again until they are (the import is safe
        to repeat). The journal's files are moved aside after (_move_imported)."""
        found = self._db.read("SELECT value FROM history_meta WHERE key = 'id'")
        if found:
            db_id = found[0][0]
        else:
            db_id = secrets.token_hex(6)
            await self._db.execute("INSERT INTO history_meta VALUES ('id', ?)", (db_id,)).wait()
        self._imported = await import_journal(self._root, self._db, self._repo.head_message, self._on_error)
        self._id = db_id

    async def _move_imported(self) -> None:
        """The old journal's files, imported, moved aside: tried at each round until done. A refusal (a file
        where STATE/imported goes) is said once and holds no commit back; the next start tries again too."""
        if not self._imported:
            return
        try:
            await move_imported(self._root, self._db, self._imported)
            self._imported = []
        except OSError as exc:
            if not self._move_said:
                self._on_error(f"history: cannot move the imported {', '.join(self._imported)} aside ({exc}); "
                               "later rounds try again")
                self._move_said = True

    async def _drop_committed(self) -> None:
        """Rows a killed server had committed to git but not yet deleted: the last commit's trailer says. The
        branch's directory is flushed first: the ref a killed (or failed) round renamed into place may not be
        on disk yet, and rows deleted before it is could be lost to a power cut."""
        await trio.to_thread.run_sync(self._repo.sync_branch)
        for line in (await self._repo.head_message()).splitlines():
            db_id, _, last = line.removeprefix(BATCH_TRAILER).partition(".")
            if line.startswith(BATCH_TRAILER) and db_id == self._id and last.isdigit():
                await self._db.execute("DELETE FROM history_pending WHERE seq <= ?", (int(last),)).wait()
        self._head_checked = True

    def _changed_paths(self, seqs: list[int]) -> tuple[str, ...] | None:
        """The files the rows' changes wrote, or None where a whole scan is due (see SCAN_EVERY)."""
        if not seqs or self._scanned_at is None or trio.current_time() - self._scanned_at >= SCAN_EVERY:
            return None  # no rows: a round for a job that failed, whose file may be on disk
        with self._paths_lock:
            paths = [self._paths.get(seq) for seq in seqs]
        if None in paths or any(p.partition("/")[0] not in self._tracked for p in paths):
            return None  # a message recorded alone, or a file elsewhere: look at everything
        return tuple(sorted(set(paths)))

    async def _add(self, paths: tuple[str, ...] | None) -> None:
        """Stage the changed files (new, changed or gone), or with None every file of the tracked directories."""
        if paths is None:
            self._make_tracked_dirs()  # a tracked directory removed by hand: its deletions are committed
            # set before the scan: a failed job's file may land while it runs, and its ask for the next
            # round to scan (_scanned_at = None, from lost or _kept) must outlive this one
            self._scanned_at = trio.current_time()
            # --force: a .gitignore a person put in the state directory (or .git/info/exclude) hides no bead
            await self._repo.git("add", "--all", "--force", "--", *self._tracked, _NOT_STATE)
        elif paths:  # on stdin: a burst's thousands of paths would pass the command line's limit
            await self._repo.git("update-index", "--add", "--remove", "-z", "--stdin",
                                 stdin=b"".join(os.fsencode(path) + b"\0" for path in paths))

    async def _commit(self, messages: tuple[str, ...], batch_id: str) -> None:
        if messages:
            message = commit_message(messages, batch_id)
        else:
            changed = await self._repo.git("diff", "--cached", "--name-status")
            if not changed.strip():
                return  # nothing to commit is not an error
            message = f"{RECOVERED}\n\n{changed}"
        # even with the last commit's tree: a change's file may already be in an earlier commit (git scanned
        # after the write but before its row was committed); its message must still reach history
        await self._repo.commit_index(message)
        await trio.to_thread.run_sync(self._repo.sync_branch)  # on disk before its messages are deleted
        try:
            await self._repo.maintain()
        except GitFailed as exc:  # git commit ignored a failed gc too; the commit is made and on disk
            self._on_error(f"history: {exc} (the commit is made; git tries again at a later commit)")

    def _make_tracked_dirs(self) -> None:
        # not PrivateDir(): that removes the temporary files of writes under way in the writer thread
        for name in self._tracked:
            ensure_private_dir(os.path.join(self._root.path, name))


def commit_message(messages: tuple[str, ...], batch_id: str) -> str:
    """One change: its message as the subject. Several: 'N changes: a, b, ...', every message in the body."""
    trailer = f"{BATCH_TRAILER}{batch_id}\n"
    if len(messages) == 1:
        return f"{messages[0]}\n\n{trailer}"
    subject = f"{len(messages)} changes: "
    for i, message in enumerate(messages):
        if len(subject) + len(message) > _SUBJECT_MAX and i:
            subject += "..."
            break
        subject += message + (", " if i < len(messages) - 1 else "")
    return subject + "\n\n" + "".join(m + "\n" for m in messages) + "\n" + trailer


def _check_tracked(name: str) -> str:
    if not name or name.startswith(".") or "/" in name or name in (JOURNAL, COMMITTING):
        raise ValueError(f"not a directory of the state to keep in history: {name!r}")
    return name
