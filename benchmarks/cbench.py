"""Build benchmarks/ninep_bench.c and run it: N client processes started together.

    binary = build()                      # gcc -O2, cached by the source's hash
    got = run_clients(binary, server, "read", procs=8, seconds=2, pin=("taskset", "-c", "0"))

Each client connects, warms up, prints "ready" and waits for a line on its
stdin; once all are ready the server's CPU time is read and every client
gets "go". They measure for `seconds`, print one `result key=value ...`
line, and exit; the server's CPU time is read again after the last result.
"""

from __future__ import annotations

import hashlib
import os
import select
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from servers import Server, cpu_seconds

SOURCE = Path(__file__).with_name("ninep_bench.c")
READY_TIMEOUT = 30.0  # s for every client to connect and warm up on a loaded machine
SLACK = 30.0          # s beyond the measured time for every result to arrive


def cache_dir() -> Path:
    env = os.environ.get("ANVILFS_TEST_CACHE")
    return (Path(env) if env else Path.home() / ".cache" / "anvilfs") / "bench"


def build() -> Path:
    """Compile the client once per version of its source; returns the binary's path."""
    if shutil.which("gcc") is None:
        raise RuntimeError("no C compiler: apt-get install gcc libc6-dev")
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    binary = cache_dir() / f"ninep_bench-{digest}"
    if not binary.is_file():
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_name(f"{binary.name}.{os.getpid()}.tmp")
        proc = subprocess.run(["gcc", "-O2", "-Wall", "-o", str(tmp), str(SOURCE)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"gcc failed on {SOURCE}:\n{proc.stderr}")
        tmp.replace(binary)  # atomic: a concurrent run sees a whole binary or none
    return binary


@dataclass
class Result:
    """The clients' results together, and the server's CPU time over the measured interval."""

    clients: list[dict[str, float]]
    server_cpu: float  # seconds

    @property
    def ops(self) -> float:
        return sum(r["ops"] for r in self.clients)

    @property
    def rate(self) -> float:
        """Operations per second, summed over the clients."""
        return sum(r["ops"] / r["secs"] for r in self.clients)

    def stat(self, key: str) -> float:
        """A per-operation time (med_us, p99_us ...): the clients' mean of it."""
        return sum(r[key] for r in self.clients) / len(self.clients)

    @property
    def server_us_per_op(self) -> float:
        return self.server_cpu * 1e6 / max(self.ops, 1)


def parse(line: str) -> dict[str, float]:
    words = line.split()
    if not words or words[0] != "result":
        raise RuntimeError(f"ninep_bench printed {line!r}, not a result line")
    return {k: float(v) for k, v in (w.split("=", 1) for w in words[1:]) if k != "mode"}


def run_clients(binary: Path, server: Server, mode: str, *, procs: int = 1, seconds: float = 2.0,
                warmup: float = 0.2, args: Sequence[str] = (), pin: Sequence[str] = ()) -> Result:
    """`procs` clients doing `mode` together; client k starts its round robin at file k*n/procs."""
    nfiles = int(args[args.index("-n") + 1]) if "-n" in args else (100 if mode == "phased" else 1000)
    clients = [
        subprocess.Popen([*pin, str(binary), mode, server.sock, server.aname, "-g", "-s", str(seconds),
                          "-w", str(warmup), "-o", str(k * nfiles // procs), *args],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k in range(procs)
    ]
    try:
        _wait_lines(clients, "ready", READY_TIMEOUT + warmup)
        cpu0 = cpu_seconds(server.pid)
        for p in clients:
            p.stdin.write("go\n")
            p.stdin.flush()
        lines = _wait_lines(clients, "result", seconds + SLACK)
        cpu1 = cpu_seconds(server.pid)
        return Result([parse(line) for line in lines], cpu1 - cpu0)
    finally:
        for p in clients:
            if p.poll() is None:
                p.kill()
            p.wait()


def _wait_lines(clients: list[subprocess.Popen], word: str, timeout: float) -> list[str]:
    """One line from each client's stdout, which must start with `word`, before a deadline."""
    deadline = time.monotonic() + timeout
    lines: dict[int, str] = {}
    while len(lines) < len(clients):
        waiting = [p for i, p in enumerate(clients) if i not in lines]
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{len(waiting)} client(s) printed no {word!r} line within {timeout:.0f} s")
        ready, _, _ = select.select([p.stdout for p in waiting], [], [], left)
        for p in waiting:
            if p.stdout in ready:
                line = p.stdout.readline()
                if not line.startswith(word):
                    p.wait(timeout=5)
                    raise RuntimeError(f"ninep_bench {p.args[1]} failed: {line.strip() or p.stderr.read().strip()}")
                lines[clients.index(p)] = line
    return [lines[i] for i in range(len(clients))]


def start_load(binary: Path, server: Server, *, procs: int = 8, mode: str = "read",
               pin: Sequence[str] = ()) -> list[subprocess.Popen]:
    """`procs` clients doing `mode` until stop_load (each runs for at most a day)."""
    return [subprocess.Popen([*pin, str(binary), mode, server.sock, server.aname, "-s", "86400", "-w", "0",
                              "-o", str(k * 1000 // procs)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for k in range(procs)]


def stop_load(clients: list[subprocess.Popen]) -> None:
    """Kill the load clients; one that ended by itself failed, and its error is raised."""
    failed = [p for p in clients if p.poll() is not None]
    for p in clients:
        if p.poll() is None:
            p.kill()
        p.wait()
    if failed:
        raise RuntimeError(f"{len(failed)} load client(s) died: {failed[0].stderr.read().strip()}")
