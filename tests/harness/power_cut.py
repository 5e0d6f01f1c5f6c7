"""Cut the power under a real ``anvilfs serve``: what the disk would hold afterwards, and a server on it.

    cuts = PowerCuts(base)                        # base: a temp dir (the server's ns/ and state/ go in it)
    srv = cuts.start()                            # anvilfs serve with the shim of powercut.c preloaded
    ...                                           # writes; note what was answered
    cuts.cut(srv)                                 # power off: SIGKILL, state/ replaced by the durable image
    srv = cuts.start()                            # the next server, on what the disk kept

tests/harness/powercut.c (built here with gcc, once, into the test cache)
follows every flush of the server and of the gits it runs, and keeps the
"durable image": what an ext4 disk would hold after a power cut at that
moment (the model is written at its top). ``cut`` takes the image's lock
and marks the power off: nothing becomes durable after this moment, and a
flush never returns (so nothing answered after it counted on one); then it
kills the server and everything it started, and builds the state directory
back from the image. ``start`` counts everything the directory holds then as
on disk (it is what the last cut left, or a fresh directory).

``drop``: flushes of paths containing this text count for nothing, as if
the server skipped them: a test under it must fail, which shows it can.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .plan9port import cache_dir
from .server import AnvilServer, start_server

SOURCE = Path(__file__).with_name("powercut.c")


def shim() -> Path:
    """powercut.c built into the test cache (once per version of the source)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    built = cache_dir() / f"powercut-{digest}.so"
    if not built.exists():
        built.parent.mkdir(parents=True, exist_ok=True)
        tmp = built.with_name(f"{built.name}.{os.getpid()}.tmp")
        result = subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wno-format-truncation",
                                 "-o", str(tmp), str(SOURCE), "-ldl"], capture_output=True, text=True, timeout=120)
        if result.returncode:
            raise RuntimeError(f"gcc could not build {SOURCE}:\n{result.stderr}")
        tmp.replace(built)  # whole or not at all, for a test running beside
    return built


class PowerCuts:
    """A state directory under `base` whose servers run with the shim, and the power cuts between them."""

    def __init__(self, base: Path, *, drop: str = ""):
        self.base = base
        self.state = (base / "state").resolve()
        self.image = base / "image"
        self.drop = drop
        self.lib = shim()
        self.servers: list[AnvilServer] = []  # every one started, to stop at the end

    def env(self) -> dict[str, str]:
        return {"LD_PRELOAD": str(self.lib), "POWERCUT_STATE": str(self.state),
                "POWERCUT_IMAGE": str(self.image), "POWERCUT_DROP": self.drop}

    def start(self, **kwargs) -> AnvilServer:
        """A server on the state directory, all of which counts as on disk now."""
        shutil.rmtree(self.image, ignore_errors=True)
        (self.image / "data").mkdir(parents=True)
        if self.state.exists():
            if ctypes.CDLL(str(self.lib)).powercut_sync_all(str(self.state).encode(), str(self.image).encode()):
                raise RuntimeError(f"the shim could not take the image of {self.state}")
        kwargs.setdefault("log_name", f"server{len(self.servers) + 1}.trace")
        self.servers.append(start_server(self.base, state=self.state, env=self.env(), trace=False, **kwargs))
        return self.servers[-1]

    def settle(self, quiet: float = 1.0, timeout: float = 30) -> None:
        """Until the server has flushed nothing for `quiet` seconds (polled, with a deadline).

        What nobody waits for (a finished turn's transcript and answer) reaches the disk a moment after
        the tree shows it; a quiet moment is when the server has stopped flushing.
        """
        counter = self.image / "flushes"
        deadline = time.monotonic() + timeout
        seen, since = -1, time.monotonic()
        while time.monotonic() - since < quiet:
            assert time.monotonic() < deadline, f"the server still flushes after {timeout} s"
            count = counter.stat().st_size if counter.exists() else 0
            if count != seen:
                seen, since = count, time.monotonic()
            time.sleep(0.05)  # polling another process's progress, bounded by the deadline

    def checkpoint(self) -> None:
        """The database's write-ahead log checkpointed, as SQLite does every 1000 pages, in a process under the
        shim: the next commits write the log over from its start, so their flushes (fdatasync) do not grow it."""
        script = ("import sqlite3, sys; db = sqlite3.connect(sys.argv[1], timeout=30); "
                  "print(*db.execute('PRAGMA wal_checkpoint(RESTART)').fetchone())")
        result = subprocess.run([sys.executable, "-c", script, str(self.state / "anvilfs.db")], env=os.environ | self.env(),
                                capture_output=True, text=True, timeout=60)
        busy, pages, done = result.stdout.split() if result.returncode == 0 else (result.stderr, "", "")
        assert busy == "0" and int(pages) > 0 and pages == done, f"the log was not checkpointed: {result}"

    def restart(self, srv: AnvilServer) -> AnvilServer:
        """Stop `srv` cleanly and start the next server, with all the disk holds written back by then
        (a machine that ran a while: its image starts from everything there)."""
        srv.stop()
        return self.start()

    def cut(self, srv: AnvilServer) -> None:
        """The power goes off now: the server and its children die, the disk keeps what the image has."""
        with open(self.image / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # no flush is half taken into the image
            (self.image / "off").touch()
        _kill_tree(srv.proc.pid)
        srv.proc.wait(timeout=30)
        srv.returncode = srv.proc.returncode
        shutil.rmtree(self.state)
        build(self.image, self.state)


def build(image: Path, state: Path) -> None:
    """The state directory as the image's last journal commit names it, each file with its flushed bytes."""
    fields = (image / "names").read_bytes().split(b"\0")[:-1]
    dirs = []
    for i in range(0, len(fields), 4):
        kind, mode, key, rel = (f.decode() for f in fields[i:i + 4])
        path = state / rel if rel else state
        if kind == "d":
            path.mkdir(exist_ok=True)
            dirs.append((path, int(mode, 8)))  # modes last: a 0500 directory must still be filled
        elif kind == "l":
            path.symlink_to(key)
        else:
            data = image / "data" / key
            shutil.copyfile(data, path) if data.exists() else path.touch()
            path.chmod(int(mode, 8))
    for path, mode in reversed(dirs):
        path.chmod(mode)


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and all it started: each is stopped first, so none can start another unseen."""
    stopped: set[int] = set()
    while more := ({pid} | _descendants(pid)) - stopped:
        for p in more:
            _signal(p, signal.SIGSTOP)
        stopped |= more
    for p in stopped:
        _signal(p, signal.SIGKILL)


def _descendants(pid: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        children = {child for child, ppid in parents.items() if ppid == parent} - found
        found |= children
        todo.extend(children)
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass  # it ended by itself
