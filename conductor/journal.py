"""The conductor's durable record: what it is about to do, and what it has done.

    journal = Journal.open(state_dir, "review", digest, run=None)   # takes the lock, loads or starts
    await journal.begin(key, {"text": ...})   # on disk before the action (a group commit)
    journal.finish(key, result)         # on disk after it
    journal.done(key) / journal.pending(key)
    read_record(state_dir, "review")    # what it holds, for a test or a person (no lock taken)

Two files per conductor name, 0600 in a 0700 directory: `STATE/NAME.json`,
the record as it was when the conductor started (replaced atomically: a
fresh temporary file, fsync, rename, fsync of the directory), and the log
it names, `STATE/NAME.GEN.log`, one JSON line per record since then, each
appended and fdatasynced before the action it announces. One append and one fdatasync
per record, whatever the record's size, where a rewrite of the whole
record would cost two fsyncs and grow with every round. A SIGKILL at any
instant leaves whole lines and at most a torn last one, which was never
synced and whose action never began, so it is ignored. Opening replays the
log onto the snapshot, makes a new empty log, writes the result as the
new snapshot naming it, and removes the old log: a crash at any point of
that leaves a snapshot with the log that goes with it. `STATE/NAME.lock` is held (flock) while a conductor runs: a second
one of the same name is refused, and a restarted one knows the killed one
is gone.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import secrets
import threading
from pathlib import Path
from typing import Any

import trio

from . import crash
from .overrides import spelled

VERSION = 1


class JournalError(Exception):
    pass


class Journal:
    def __init__(self, path: Path, data: dict[str, Any], lock_fd: int):
        self.path, self.data, self._lock_fd = path, data, lock_fd
        self.resumed_from: dict | None = None
        self.resumed = False  # this run's record was on disk already: it goes on after a kill or a halt
        self.replaced_run: str | None = None  # the run an --again replaced (finished or not)
        self._log: GroupLog | None = None
        self._lazy: list[bytes] = []  # lines of records to go to disk with the next one

    @classmethod
    def open(cls, state_dir: Path, name: str, digest: str, *, run: str | None = None, again: bool = False,
             backends: dict[str, str] | None = None, override: list[str] | None = None) -> Journal:
        """`backends`: each session the run makes and its backend (after `override`, the --backend values)."""
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_fd = _lock(state_dir / f"{name}.lock", name)
        path = state_dir / f"{name}.json"
        try:
            data = read_record(state_dir, name)
            other = _other_version(path, data, digest, backends or {}, override or [], again)
        except JournalError:
            os.close(lock_fd)
            raise
        resumed, replaced = data is not None, None
        if data is None or (again and (data.get("finished") or other)):
            resumed, replaced = False, data and data.get("run")
            data = {"version": VERSION, "name": name, "digest": digest, "run": run or secrets.token_hex(3),
                    "done": {}, "pending": {}, "finished": None}
        if _untouched(data) or "backends" not in data:  # nothing done yet, or a record from before --backend
            data["backends"], data["override"] = backends or {}, override or []
        journal = cls(path, data, lock_fd)
        journal.resumed = resumed
        journal.replaced_run = replaced or None  # its conductor is gone: this one holds the lock
        journal.resumed_from = data.pop("halted", None)  # a stop or interrupt before: this run goes on
        old, data["log"] = data.get("log"), f"{name}.{secrets.token_hex(4)}.log"
        # a new empty log first, then the snapshot that names it: a crash between leaves the old pair whole
        journal._log = GroupLog(_empty_log(state_dir / data["log"]))
        write_atomically(path, json.dumps(data, sort_keys=True).encode())
        if old:
            with contextlib.suppress(FileNotFoundError):
                (state_dir / old).unlink()
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

        The fdatasync is made by a worker thread, and the begins of lanes that come together share
        one: the loop goes on serving the other lanes meanwhile (GroupLog).
        """
        self.data["pending"][key] = intent
        await self._log.write(self._take_lazy() + _line({"begin": key, "intent": intent}), f"begin {key}")

    def finish(self, key: str, result: Any = True, *, lazy: bool = False) -> None:
        """Record a step done; `lazy` leaves it to go to disk with the next record.

        For steps that only look (wait, check, gate): lost to a crash, the
        step is done again with the same result, since nothing has acted
        since; the next action's record carries it to disk first. That
        saves the syncs of two records per round on the path from a
        session's await to its next prompt. And for a prompt: lost, the step
        is begun and not done, and a restart looks for each prompt in its
        target's queue and log before it would send it again.
        """
        _apply(self.data, entry := {"finish": key, "result": result})
        if lazy:
            self._lazy.append(_line(entry))
        else:
            self._record(entry, f"done {key}", applied=True)

    def halt(self, outcome: str, why: str) -> None:
        """Stopped or interrupted from outside: the run is not over, and `run` again resumes it."""
        self._record({"halt": {"outcome": outcome, "why": why}}, f"halt {outcome}")

    @property
    def halted(self) -> dict | None:
        return self.data.get("halted")

    def end(self, outcome: str, why: str) -> None:
        self._record({"end": {"outcome": outcome, "why": why}}, f"end {outcome}")

    def close(self) -> None:
        if self._log is not None:
            os.close(self._log.fd)
        os.close(self._lock_fd)

    def _record(self, entry: dict, what: str, *, applied: bool = False) -> None:
        """A record on disk now, in the loop (after what is on its way, in order)."""
        if not applied:
            _apply(self.data, entry)
        self._log.write_now(self._take_lazy() + _line(entry), what)

    def _take_lazy(self) -> bytes:
        data = b"".join(self._lazy)
        self._lazy.clear()
        return data


class GroupLog:
    """Records appended to the log, each fdatasynced before it counts, in the order they came.

    `write` is a group commit: the records of lanes that come together share one write and one
    fdatasync, made in a worker thread while the loop serves the other lanes. `write_now` does the
    same in the loop (with what is waiting, first). The queue is a deque (thread-safe append and
    popleft); the lock keeps the thread's and the loop's writes from interleaving.
    """

    def __init__(self, fd: int):
        self.fd = fd
        self._queue: collections.deque[tuple[bytes, str]] = collections.deque()
        self._lock = threading.Lock()
        self._queued = self._written = 0
        self._progress = trio.Event()
        self._writing = False

    async def write(self, data: bytes, what: str) -> None:
        self._queue.append((data, what))
        self._queued += 1
        mine = self._queued
        if not self._writing:  # this task writes, for itself and for whoever comes meanwhile
            self._writing = True
            try:
                with trio.CancelScope(shield=True):  # a cancelled lane must not leave the others waiting
                    while self._written < self._queued:
                        self._wrote(await trio.to_thread.run_sync(self._drain))
            finally:
                self._writing = False
        while self._written < mine:
            await self._progress.wait()

    def write_now(self, data: bytes, what: str) -> None:
        self._queue.append((data, what))
        self._queued += 1
        self._wrote(self._drain())

    def _drain(self) -> list[str]:
        """Write and fdatasync everything queued (the caller's thread: the worker or the loop)."""
        with self._lock:
            taken = []
            while self._queue:
                taken.append(self._queue.popleft())
            if taken:
                crash.hold_begin(taken[-1][1])
                view = memoryview(b"".join(data for data, _ in taken))
                while view:
                    view = view[os.write(self.fd, view):]
                os.fdatasync(self.fd)  # on disk before the actions they announce
        return [what for _, what in taken]

    def _wrote(self, whats: list[str]) -> None:
        """In the loop, after a drain: count them, pass their crash points, wake their writers."""
        for what in whats:
            crash.point(f"record: {what}")
        self._written += len(whats)
        self._progress.set()
        self._progress = trio.Event()


def _other_version(path: Path, data: dict | None, digest: str, backends: dict[str, str], override: list[str],
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


def read_record(state_dir: Path, name: str) -> dict | None:
    """The record of conductor `name`: its snapshot with its log replayed (None if there is none)."""
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
                break  # torn by a kill while written: never synced, its action never begun
            raise JournalError(f"{state_dir / data['log']}:{number}: a broken line; "
                               "move the conductor's files away to start over") from None
        if entry is not None:
            _apply(data, entry)
    return data


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


def _line(entry: dict) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def _empty_log(path: Path) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.fsync(fd)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)  # the log's name is on disk before a record in it counts
    finally:
        os.close(dir_fd)
    return fd


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _lock(path: Path, name: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise JournalError(f"another conductor named {name!r} is running (it holds {path}); "
                           "stop it first, or give this one another --name") from None
    return fd
