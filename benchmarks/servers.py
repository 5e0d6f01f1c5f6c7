"""Start and stop the servers the benchmarks compare: `anvilfs serve` and diod.

    with anvilfs_server(tmp, names, cmd, pin) as (server, status, made): ...
    with diod_server(tmp, names, status, pin) as server: ...
    with floor_server(tmp, names, status, pin) as server: ...   # benchmarks/floor_server.py

Both listen on a unix socket in `tmp`, are ready when a 9P2000.L handshake
on it succeeds before a deadline, and are stopped on the way out (anvilfs by
SIGTERM, then SIGKILL; diod by SIGKILL, as SIGTERM sometimes crashes it).
anvilfs gets one sim session per name, made through its `ctl`; diod
exports one real file NAME/status per name holding anvilfs's status bytes. `pin` is a command prefix such as ("taskset", "-c", "0"): taskset
execs the server, so the pid stays the server's and its threads inherit
the mask.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ninep_l import connect

from anvilfs.client import Client, ServerError
from anvilfs.ninep import messages as m

DIOD = shutil.which("diod") or "/usr/sbin/diod"
START_TIMEOUT = 15.0   # s for a server to answer its first handshake
SETTLE_TIMEOUT = 60.0  # s for 1,000 new sim sessions to leave `starting` on a loaded machine


@dataclass
class Server:
    name: str
    sock: str
    aname: str
    proc: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads included (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """VmRSS of a process in MiB (/proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(server: Server, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    try:
        connect(server.sock, server.aname, deadline).close()
    except Exception as exc:
        code = server.proc.poll()
        tail = server.log.read_text(errors="replace")[-2000:] if server.log.exists() else ""
        raise RuntimeError(f"{server.name} did not come up on {server.sock} (exit code {code}): {exc}\n{tail}") from None


# ---------------------------------------------------------------- anvilfs


def anvilfs_dirs(tmp: Path, max_sessions: int) -> tuple[Path, Path, Path]:
    """The namespace, state directory and configuration file of a benchmark server.

    The state directory must be 0700 (the server refuses to start otherwise);
    the configuration raises [limits] max_sessions (default 256) and keeps
    the user's own configuration out of the measurement.
    """
    ns, state = tmp / "ns", tmp / "state"
    ns.mkdir(mode=0o700, exist_ok=True)
    state.mkdir(mode=0o700, exist_ok=True)
    config = tmp / "config.toml"
    config.write_text(f"[limits]\nmax_sessions = {max_sessions}\n")
    return ns, state, config


def spawn_anvilfs(tmp: Path, cmd: Sequence[str] | None = None, pin: Sequence[str] = (),
                  max_sessions: int = 2000) -> Server:
    """Exec `anvilfs serve` on tmp's state directory (kept if it is there); not waited for."""
    ns, state, config = anvilfs_dirs(tmp, max_sessions)
    log = tmp / "anvilfs.log"
    argv = [*pin, *(cmd or [sys.executable, "-m", "anvilfs"]), "serve", "--config", str(config),
            "--namespace", str(ns), "--state", str(state)]
    with open(log, "ab") as out:
        # cwd: `python -m anvilfs` puts the working directory first on sys.path, so a checkout there
        # would win over the one --anvilfs-cmd names
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp)
    return Server("anvilfs", str(ns / "agent"), "", proc, log)


def admin_client(sock: str) -> Client:
    """A 9P2000 connection with the project's own client."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    return Client(s)


def make_sims(sock: str, names: Sequence[str]) -> tuple[float, float]:
    """Make one sim session per name, all Twrites on one open ctl sent before
    any reply is read; then wait until none is `starting`. Returns the seconds
    until the last Rwrite, and until none was starting."""
    t0 = time.monotonic()
    with admin_client(sock) as admin:
        fid = admin.open("ctl", 1)
        for tag, name in enumerate(names, 1):
            admin.send(m.Twrite(tag=tag % 0xFFFF, fid=fid, offset=0, data=f"new sim /tmp name={name}\n".encode()))
        for _ in names:
            reply = admin.receive()
            if not isinstance(reply, m.Rwrite):
                raise ServerError(f"new sim: {reply}")
        admin.clunk(fid)
        written = time.monotonic() - t0
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while b" starting " in admin.read_file("list"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"sim sessions still starting after {SETTLE_TIMEOUT} s")
            time.sleep(0.05)  # poll interval, bounded by the deadline
    return written, time.monotonic() - t0


@contextlib.contextmanager
def anvilfs_server(tmp: Path, names: Sequence[str], cmd: Sequence[str] | None = None,
                   pin: Sequence[str] = ()) -> Iterator[tuple[Server, bytes, tuple[float, float]]]:
    """`anvilfs serve` with one sim session per name: yields (server, first status bytes, make_sims's seconds)."""
    server = spawn_anvilfs(tmp, cmd, pin, max_sessions=max(len(names) * 2, 256))
    try:
        wait_ready(server)
        made = make_sims(server.sock, names)
        with admin_client(server.sock) as admin:
            status = admin.read_file(f"{names[0]}/status")
        yield server, status, made
    finally:
        stop(server.proc)


# ---------------------------------------------------------------- diod


@contextlib.contextmanager
def diod_server(tmp: Path, names: Sequence[str], status: bytes, pin: Sequence[str] = ()) -> Iterator[Server]:
    """diod exporting one real file NAME/status per name, holding `status`."""
    export = tmp / "export"
    for name in names:
        d = export / name
        d.mkdir(parents=True)
        (d / "status").write_bytes(status)
    log = tmp / "diod.log"
    argv = [*pin, DIOD, "-f", "-n", "-S", "-U", "root", "-c", "/dev/null", "-L", "stderr",
            "-l", str(tmp / "sock"), "-e", str(export)]
    with open(log, "wb") as out:
        # cwd: if diod dumps core, the ~180 MB file goes away with tmp
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp)
    server = Server("diod", str(tmp / "sock"), str(export), proc, log)
    try:
        wait_ready(server)
        yield server
    finally:
        proc.kill()  # diod 1.0.24 sometimes dies of SIGSEGV on SIGTERM (and dumps core); it has nothing to save
        proc.wait()


@contextlib.contextmanager
def floor_server(tmp: Path, names: Sequence[str], status: bytes, pin: Sequence[str] = ()) -> Iterator[Server]:
    """floor_server.py (the least a trio server costs per request) serving NAME/status per name."""
    log = tmp / "floor.log"
    script = Path(__file__).with_name("floor_server.py")
    argv = [*pin, sys.executable, str(script), str(tmp / "sock"), *names, "--status", status.decode()]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp)
    server = Server("floor", str(tmp / "sock"), "", proc, log)
    try:
        wait_ready(server)
        yield server
    finally:
        stop(server.proc)


def diod_missing() -> str | None:
    return None if os.access(DIOD, os.X_OK) else f"diod not found ({DIOD}); apt-get install diod"
