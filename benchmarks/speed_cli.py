"""The table's last row: one whole `anvilfs read s0001/status` process, with plan9port's `9p` beside it.

Each run is timed by wall clock around subprocess.run, and its CPU (user +
system) is the delta of getrusage(RUSAGE_CHILDREN) across it. The two
clients alternate, so load on the machine falls on both alike. With
--pin same the child is put on CPU 0, like the server.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from report import Target, figure, percentile, say
from servers import Server

REPO = Path(__file__).resolve().parents[1]
RUNS = 20
RUN_TIMEOUT = 30.0  # s for one client process on a loaded machine
TARGET = Target("<=", 100.0, " ms")
PATH = "s0001/status"


def anvilfs_read(cmd: Sequence[str] | None, sock: str) -> list[str]:
    """This venv's console script (as a user types it), or the given CLI command."""
    script = Path(sys.executable).parent / "anvilfs"
    base = list(cmd) if cmd else [str(script)] if script.is_file() else [sys.executable, "-m", "anvilfs"]
    return [*base, "read", "-a", f"unix!{sock}", PATH]


def ninep_read(sock: str) -> list[str] | None:
    """plan9port's `9p read`, built by the test harness if it is not yet (~40 s); None if it cannot be."""
    sys.path.insert(0, str(REPO))
    try:
        from tests.harness.plan9port import Unavailable, plan9port_bin
    finally:
        sys.path.remove(str(REPO))
    try:
        return [str(plan9port_bin() / "9p"), "-a", f"unix!{sock}", "read", PATH]
    except Unavailable as exc:
        say(f"  (no plan9port 9p: {exc})")
        return None


def time_run(argv: list[str], expect: bytes, cpus: set[int] | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run, which must print `expect`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL,
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or proc.stdout != expect:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}, printed {proc.stdout!r}: {proc.stderr!r}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_cli(server: Server, status: bytes, cmd: Sequence[str] | None, pinned: bool, runs: int = RUNS) -> None:
    say(f"\n## cli: one `anvilfs read {PATH}` process, {runs} runs (plan9port `9p read` alternating with it)")
    clients = {"anvilfs read": anvilfs_read(cmd, server.sock)}
    if (ninep := ninep_read(server.sock)) is not None:
        clients["9p read (plan9port)"] = ninep
    cpus = {0} if pinned else None
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
    for name, argv in clients.items():  # one untimed run each: page cache, plan9port build
        time_run(argv, status, cpus)
    for _ in range(runs):
        for name, argv in clients.items():
            times[name].append(time_run(argv, status, cpus))
    say(f"  command: {' '.join(clients['anvilfs read'])}")
    for name, got in times.items():
        wall = [w * 1e3 for w, _ in got]
        cpu = [c * 1e3 for _, c in got]
        target = TARGET if name == "anvilfs read" else None
        figure(f"{name}: wall, median", statistics.median(wall), "ms", target,
               f"p90 {percentile(wall, 0.9):.1f}, fastest {min(wall):.1f}")
        figure(f"{name}: CPU (user+sys), median", statistics.median(cpu), "ms", target)
