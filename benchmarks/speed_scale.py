"""Item 4: the server with 1,000 sim sessions: its RSS, a `list` read, a restart.

RSS is VmRSS from /proc/PID/status. The `list` read is the C client's
walk + lopen + read to EOF + clunk of `list`, 50 times one after another
(median and p90). The restart: SIGTERM to the server, wait for it to exit,
exec `anvilfs serve` again on the same state directory, and time from the
exec to the first answered read of `list` (and to the first `list` that
has every session again, if that comes later). Run last: the server it
measures is the restarted one from then on, and is stopped here.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from cbench import run_clients
from report import Target, figure, say
from servers import Server, cpu_seconds, rss_mib, spawn_anvilfs, stop

from anvilfs.client import Client, ServerError

LIST_READS = 50
RESTART_TIMEOUT = 60.0  # s for a restarted server to list every session on a loaded machine
POLL = 0.005            # s between attempts while it starts: the resolution of the restart time
STOP_TIMEOUT = 30.0


def list_lines(sock: str) -> int | None:
    """Sessions in one answered read of `list`, or None if the server does not answer yet."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock)
        with Client(s) as client:
            return client.read_file("list").count(b"\n")
    except (OSError, ServerError):
        s.close()
        return None


def restart(server: Server, tmp: Path, cmd: Sequence[str] | None, pin: Sequence[str],
            sessions: int) -> tuple[Server, float, float, float, int, float]:
    """Stop and start again; (new server, exit s, s to the first list, s to a full list, sessions in the first,
    the new server's CPU seconds up to the first list: on a busy machine the wall time is mostly waiting)."""
    t0 = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        server.proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"anvilfs did not exit within {STOP_TIMEOUT} s of SIGTERM") from None
    exited = time.monotonic() - t0
    t0 = time.monotonic()
    new = spawn_anvilfs(tmp, cmd, pin, max_sessions=max(2 * sessions, 256))
    first = first_count = None
    deadline = t0 + RESTART_TIMEOUT
    while True:
        n = list_lines(new.sock)
        if n is not None and first is None:
            first, first_count, first_cpu = time.monotonic() - t0, n, cpu_seconds(new.pid)
        if n is not None and n >= sessions:
            return new, exited, first, time.monotonic() - t0, first_count, first_cpu
        if new.proc.poll() is not None or time.monotonic() > deadline:
            stop(new.proc)
            raise TimeoutError(f"the restarted server listed {n} of {sessions} sessions "
                               f"(exit code {new.proc.poll()}); see {new.log}")
        time.sleep(POLL)  # poll interval, bounded by the deadline


def run_scale(server: Server, tmp: Path, binary: Path, cmd: Sequence[str] | None, pin: Sequence[str]) -> None:
    sessions = list_lines(server.sock)
    say(f"\n## scale: the server with {sessions} sim sessions")
    figure("server RSS (VmRSS)", rss_mib(server.pid), "MiB", Target("<=", 200, " MiB"))
    r = run_clients(binary, server, "read", seconds=600, warmup=0, pin=pin,
                    args=("-p", "list", "-n", "1", "-c", str(LIST_READS)))
    figure(f"`list` read, median of {LIST_READS}", r.stat("med_us") / 1e3, "ms", Target("<=", 5.0, " ms"),
           f"p90 {r.stat('p90_us') / 1e3:.2f} ms, {r.clients[0]['bytes'] / LIST_READS:.0f} bytes, "
           f"server {r.server_us_per_op / 1e3:.2f} ms CPU each")
    new, exited, first, full, count, cpu = restart(server, tmp, cmd, pin, sessions)
    try:
        figure("restart: exec to the first answered `list`", first, "s", Target("<=", 1.0, " s"),
               f"it listed {count} sessions; all after {full:.2f} s; the old one exited {exited:.2f} s after SIGTERM")
        figure("restart: the new server's CPU to that `list`", cpu, "s", Target("<=", 1.0, " s"),
               "utime+stime: what the wall time would be on an idle CPU, bar git's own processes")
        figure("restarted server RSS (VmRSS)", rss_mib(new.pid), "MiB", None)
    finally:
        stop(new.proc)
