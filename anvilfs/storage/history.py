"""The git history of the state directory: every durable change committed, with its message, in groups.

A domain writes a change's file (PrivateDir: atomic, fsynced), calls
``record(message)``, then answers. ``record`` only appends the message to a
journal (one fsynced append); ``run`` commits soon after, grouping what
came in a short moment, because one git add + commit costs far more than a
durable write.

No message is lost, and none is committed twice, whenever the server dies:

    record     appends {id, message} to history.journal
    commit     renames history.journal to history.committing (one atomic step),
               `git add` the tracked directories, `git commit` the messages with
               the batch's id as a trailer, then removes history.committing

A restart that finds history.committing looks for its batch id in the last
commit: there, only the removal was missed; missing, it is committed now.
Changes to the tracked files that no message covers (the server died
between a write and its record) are committed at start as recovered.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import trio

from ..journal import one_line
from ..waitable import Changes
from .gitrepo import GitRepository
from .private import PrivateDir

JOURNAL = "history.journal"
COMMITTING = "history.committing"
BATCH_TRAILER = "Anvilfs-Batch: "
RECOVERED = "Recovered: changes no message was recorded for (a server stopped before recording them, or a hand edit)"
_SUBJECT_MAX = 120  # of a grouped commit's subject; every message is in the body anyway
# Temporary files of PrivateDir.write_atomic in progress while git scans the directory.
_NOT_STATE = ":(exclude)*/.*.tmp"


@dataclass(frozen=True, slots=True)
class _Batch:
    """The messages of history.committing, and the id of its last record (its batch id)."""
    messages: tuple[str, ...]
    batch_id: str | None


class GitHistory:
    """The state directory as a git repository: changes committed in groups, each with its message.

    Call ``record`` from the trio thread, after the change's file is written.
    Run ``run`` as a task; ``flush`` before a clean stop (a cancelled git may
    leave a lock file, which the next start removes).
    """

    def __init__(self, root: PrivateDir, tracked: tuple[str, ...] = ("beads", "convoys"), *,
                 on_error: Callable[[str], None] = lambda text: None,
                 group_delay: float = 0.1, retry_delay: float = 1.0, lock_timeout: float = 10.0):
        self._root = root
        self._tracked = tuple(_check_tracked(name) for name in tracked)
        self._repo = GitRepository(root, lock_timeout=lock_timeout)  # first: a refused start changes nothing
        self._make_tracked_dirs()
        self._on_error = on_error
        self._group_delay = group_delay
        self._retry_delay = retry_delay
        self._boot = secrets.token_hex(6)  # record ids are unique across server lives
        self._recorded = 0  # records made by this object
        self._in_committing = 0  # of those, how many are in history.committing or before
        self._committed = 0  # of those, how many are in history
        self._commits = Changes()
        self._wanted = trio.Event()
        self._lock = trio.Lock()  # one git at a time: they share the index
        _end_torn_line(root)

    @property
    def stale_locks_removed(self) -> tuple[str, ...]:
        """git lock files (relative to .git) that a killed git had left, removed at start."""
        return self._repo.stale_locks_removed

    def close(self) -> None:
        self._repo.close()

    def record(self, message: str) -> None:
        """Note a change just written, durably; it is committed with `message` soon."""
        record_id = f"{self._boot}.{self._recorded + 1}"
        self._root.append(JOURNAL, (json.dumps([record_id, one_line(message)]) + "\n").encode())
        self._recorded += 1
        self._wanted.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Commit what a stopped server left pending, then commit soon after every record, for ever."""
        ok = await self._commit_reporting()
        task_status.started()
        while True:
            if ok:
                await self._wanted.wait()
                await trio.sleep(self._group_delay)  # let a burst of changes share one commit
            else:
                await trio.sleep(self._retry_delay)  # git failed (disk full?): the journal waits
            ok = await self._commit_reporting()

    async def flush(self) -> None:
        """Commit everything pending now; StorageError if git fails (nothing is lost then either)."""
        await self._commit_pending()

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
            self._on_error(f"history: {exc}; will retry (the messages wait in {self._root.path}/history.*)")
            return False

    async def _commit_pending(self) -> None:
        async with self._lock:
            leftover = self._read_batch()  # from a failed commit, or a server that died
            if leftover is not None:
                if not await self._in_last_commit(leftover):
                    await self._commit(leftover)
                self._batch_done()
            self._wanted = trio.Event()  # records from here on wake the next round
            self._root.move(JOURNAL, self._root, COMMITTING)
            self._in_committing = self._recorded
            await self._commit(self._read_batch() or _Batch((), None))
            self._batch_done()

    async def _in_last_commit(self, batch: _Batch) -> bool:
        if batch.batch_id is None:
            return False
        return BATCH_TRAILER + batch.batch_id in (await self._repo.head_message()).splitlines()

    async def _commit(self, batch: _Batch) -> None:
        self._make_tracked_dirs()  # a tracked directory removed by hand: its deletions are committed
        await self._repo.git("add", "--all", "--", *self._tracked, _NOT_STATE)
        if batch.messages:
            message = commit_message(batch.messages, batch.batch_id)
        else:
            changed = await self._repo.git("diff", "--cached", "--name-status")
            if not changed.strip():
                return  # nothing to commit is not an error
            message = f"{RECOVERED}\n\n{changed}"
        # --allow-empty: a change's file may already be in an earlier commit (git scanned after the
        # write but before the record); its message must still reach history
        await self._repo.git("commit", "--quiet", "--no-verify", "--allow-empty", "--cleanup=verbatim",
                             "--file=-", stdin=message.encode())

    def _batch_done(self) -> None:
        self._root.remove(COMMITTING)
        self._committed = self._in_committing
        self._commits.bump()

    # ------------------------------------------------------------ the journal

    def _read_batch(self) -> _Batch | None:
        data = self._root.read(COMMITTING)
        if data is None:
            return None
        records = []
        *lines, _torn = data.split(b"\n")  # a torn last line was never answered: recovered from the files
        for line in lines:
            try:
                record_id, message = json.loads(line)
                records.append((str(record_id), str(message)))
            except (ValueError, TypeError):
                self._on_error(f"history: skipped a line of {COMMITTING} that is not a record: {line[:80]!r}")
        return _Batch(tuple(m for _, m in records), records[-1][0] if records else None)

    def _make_tracked_dirs(self) -> None:
        for name in self._tracked:
            self._root.subdir(name).close()


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


def _end_torn_line(root: PrivateDir) -> None:
    """A record cut off by a crash was never answered; end its line so the next record starts clean."""
    data = root.read(JOURNAL)
    if data and not data.endswith(b"\n"):
        root.append(JOURNAL, b"\n")


def _check_tracked(name: str) -> str:
    if not name or name.startswith(".") or "/" in name or name in (JOURNAL, COMMITTING):
        raise ValueError(f"not a directory of the state to keep in history: {name!r}")
    return name
