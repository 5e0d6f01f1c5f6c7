"""The conductor's durable record: what it is about to do, and what it has done.

    journal = Journal.open(state_dir, "review", digest, run=None)   # takes the lock, loads or starts
    journal.begin(key, {"text": ...})   # on disk before the action
    journal.finish(key, result)         # on disk after it
    journal.done(key) / journal.pending(key)

One JSON file per conductor name, `STATE/NAME.json`, 0600 in a 0700
directory, replaced atomically at each record (a fresh temporary file,
fsync, rename, fsync of the directory), so a SIGKILL at any instant leaves
the previous record or the next, never a torn one. `STATE/NAME.lock` is
held (flock) while a conductor runs: a second one of the same name is
refused, and a restarted one knows the killed one is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Any

from . import crash

VERSION = 1


class JournalError(Exception):
    pass


class Journal:
    def __init__(self, path: Path, data: dict[str, Any], lock_fd: int):
        self.path, self.data, self._lock_fd = path, data, lock_fd
        self.resumed_from: dict | None = None

    @classmethod
    def open(cls, state_dir: Path, name: str, digest: str, *, run: str | None = None, again: bool = False) -> Journal:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_fd = _lock(state_dir / f"{name}.lock", name)
        path = state_dir / f"{name}.json"
        try:
            data = json.loads(path.read_text()) if path.exists() else None
        except (OSError, ValueError) as exc:
            os.close(lock_fd)
            raise JournalError(f"{path}: cannot read the conductor's record ({exc}); move it away to start over") from None
        if data is not None and data.get("digest") != digest and not again:
            os.close(lock_fd)
            raise JournalError(f"{path}: this run began with another version of the workflow file; "
                               "restore that file to resume, or give --again to start a new run")
        if data is None or (again and (data.get("finished") or data.get("digest") != digest)):
            data = {"version": VERSION, "name": name, "digest": digest, "run": run or secrets.token_hex(3),
                    "done": {}, "pending": {}, "finished": None}
        journal = cls(path, data, lock_fd)
        journal.resumed_from = data.pop("halted", None)  # a stop or interrupt before: this run goes on
        journal._save("start")
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

    def begin(self, key: str, intent: dict) -> None:
        self.data["pending"][key] = intent
        self._save(f"begin {key}")

    def finish(self, key: str, result: Any = True, *, lazy: bool = False) -> None:
        """Record a step done; `lazy` leaves it to go to disk with the next record.

        For steps that only look (wait, check, gate): lost to a crash, the
        step is done again with the same result, since nothing has acted
        since; the next action's intent carries it to disk first. That saves
        two fsyncs per round on the path from a session's await to its next prompt.
        """
        self.data["pending"].pop(key, None)
        self.data["done"][key] = result
        if not lazy:
            self._save(f"done {key}")

    def halt(self, outcome: str, why: str) -> None:
        """Stopped or interrupted from outside: the run is not over, and `run` again resumes it."""
        self.data["halted"] = {"outcome": outcome, "why": why}
        self._save(f"halt {outcome}")

    @property
    def halted(self) -> dict | None:
        return self.data.get("halted")

    def end(self, outcome: str, why: str) -> None:
        self.data["finished"] = {"outcome": outcome, "why": why}
        self._save(f"end {outcome}")

    def close(self) -> None:
        os.close(self._lock_fd)

    def _save(self, what: str) -> None:
        write_atomically(self.path, json.dumps(self.data, indent=1, sort_keys=True).encode())
        crash.point(f"record: {what}")


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
