"""Benchmark: a conductor watching many sessions (run by hand; prints numbers).

    .venv/bin/python benchmarks/conductor.py [--sessions 100] [--rounds 5] [--poll 1]

Starts `anvilfs serve` with an instant command backend (`true`: each turn is
one process that exits at once), and runs the conductor as a real process
(`python -m conductor run`) on a workflow that, each round, prompts every
session, waits for all of them, and goes on (a check that never breaks,
`exhausted = "next"`). An observer follows `agent/events` and stamps each
line as it arrives: a session's `await` line and its `prompt queued` line.

What is measured: the conductor's reaction. A round's wait is satisfied
when the last session of the round reaches `await`; from that line to each
session's next `prompt queued` line is one sample (N-1 rounds x N
sessions). Median and p99, in blocking mode (the conductor blocks on each
session's `wait`) and, with --poll S, polling `queue`/`status` every S
seconds. Both stamps come from the same observer, so its own delay cancels
out to within its scheduling.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from anvilfs.client import Client  # noqa: E402
from harness.server import REPO_ROOT, start_server  # noqa: E402


def workflow(n: int, rounds: int, cwd: Path) -> str:
    sessions = "".join(f'[sessions.s{i}]\nbackend = "instant"\ncwd = "{cwd}"\n' for i in range(n))
    names = [f"s{i}" for i in range(n)]
    return f'''name = "bench"
{sessions}
[groups]
all = {names!r}
[[steps]]
id = "loop"
kind = "repeat"
max_rounds = {rounds}
exhausted = "next"
  [[steps.steps]]
  id = "go"
  kind = "prompt"
  to = ["all"]
  text = "round {{round}}"
  [[steps.steps]]
  id = "done"
  kind = "wait"
  sessions = ["all"]
  [[steps.steps]]
  id = "never"
  kind = "check"
  any = ["s0"]
  contains = "no such phrase"
'''.replace("'", '"')


def observe(sock_path: Path, stamps: list, stop: threading.Event) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(sock_path))
    from anvilfs.ninep import consts as c
    with Client(sock, uname="observer") as client:
        fid = client.open("events", c.OREAD)
        offset, rest = 0, b""
        while not stop.is_set():
            try:
                data = client.read_chunk(fid, offset)
            except ConnectionError:
                return  # the server stopped: the run is over
            now = time.monotonic()
            offset += len(data)
            rest += data
            *lines, rest = rest.split(b"\n")
            stamps += [(now, line.decode()) for line in lines]


def reaction(stamps: list, n: int) -> list[float]:
    """Per round: the last session's await -> each session's next prompt queued (ms)."""
    awaits, samples, waiting = 0, [], None
    for now, line in stamps:
        words = line.split()
        if len(words) < 3 or not words[1].startswith("s"):
            continue
        if words[2] == "await":
            awaits += 1
            if awaits % n == 0:
                waiting = now
        elif words[2:4] == ["prompt", "queued"] and waiting is not None:
            samples.append((now - waiting) * 1000)
    return samples


def run(n: int, rounds: int, poll: float | None) -> list[float]:
    base = Path(tempfile.mkdtemp(prefix="condb."))
    (base / "config.toml").write_text('[backends.instant]\nkind = "command"\nargv = ["true"]\n')
    (base / "work").mkdir()
    (base / "bench.toml").write_text(workflow(n, rounds, base / "work"))
    srv = start_server(base, extra_args=["--config", str(base / "config.toml")], trace=False)
    stamps, stop = [], threading.Event()
    watcher = threading.Thread(target=observe, args=(srv.socket, stamps, stop), daemon=True)
    try:
        watcher.start()
        argv = [sys.executable, "-m", "conductor", "run", "-a", srv.address, "--state", str(base / "st"),
                *(["--poll", str(poll)] if poll else []), str(base / "bench.toml")]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"conductor failed: {done.stdout}{done.stderr[-2000:]}")
        time.sleep(0.2)  # let the observer take the last lines (a benchmark, not a test)
    finally:
        stop.set()
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)
    return reaction(stamps, n)


def report(label: str, samples: list[float]) -> None:
    samples.sort()
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    print(f"{label}: {len(samples)} samples, median {statistics.median(samples):.1f} ms, p99 {p99:.1f} ms, "
          f"max {samples[-1]:.1f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--poll", type=float, default=1.0, help="the polling interval of the second run (0: skip it)")
    args = p.parse_args()
    report(f"blocking, {args.sessions} sessions", run(args.sessions, args.rounds, None))
    if args.poll:
        report(f"polling every {args.poll:g} s, {args.sessions} sessions", run(args.sessions, args.rounds, args.poll))


if __name__ == "__main__":
    main()
