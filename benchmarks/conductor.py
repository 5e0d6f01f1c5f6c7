"""Benchmark: a conductor watching many sessions (run by hand; prints numbers).

    .venv/bin/python benchmarks/conductor.py [--sessions 100] [--rounds 30] [--poll 1] [--agent sim|true]
        [--server-state /dev/shm] [--profile conductor.svg] [--profile-server server.txt] [--conductor-dir DIR]

Starts `anvilfs serve` and runs the conductor as a real process (`python -m
conductor run`) on a workflow that, each round, prompts every session,
waits for all of them, and goes on (a check that never breaks, `exhausted
= "next"`). The agents are the server's simulated ones (`sim`: a turn of
about 60 ms, no process) or, with --agent true, a command backend running
`true` (a process per turn). An observer follows `agent/events` and stamps
each line as it arrives: a session's `await` line and its `prompt queued`
line.

What is measured: the conductor's reaction. A round's wait is satisfied
when the last session of the round reaches `await`; from that line to each
session's next `prompt queued` line is one sample of "every prompt"
((rounds-1) x N), and to the round's first `prompt queued` one sample of
"first prompt" (rounds-1). Median and p99, in blocking mode (the conductor
blocks on each session's `wait`) and, with --poll S, polling `queue` and
`status` every S seconds. Both stamps come from the same observer, so its
own delay cancels out to within its scheduling.

--server-state /dev/shm keeps the server's state on tmpfs, where its fsyncs
cost nothing (the conductor's record stays on the disk): what is left is
the conductor's part and the machine's CPU. --profile records the
conductor with py-spy (an SVG flame graph, or collapsed stacks if the name
ends in .txt); --profile-server records the server the same way.
--conductor-dir runs the conductor package found in DIR instead (another
commit's: `git archive COMMIT conductor | tar -x -C DIR`), to compare.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from anvilfs.client import Client  # noqa: E402
from harness.server import REPO_ROOT, start_server  # noqa: E402

PYSPY = os.environ.get("PYSPY", "/tmp/pyspy/bin/py-spy")


def workflow(n: int, rounds: int, cwd: Path, backend: str) -> str:
    sessions = "".join(f'[sessions.s{i}]\nbackend = "{backend}"\ncwd = "{cwd}"\n' for i in range(n))
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


def reaction(stamps: list, n: int) -> tuple[list[float], list[float]]:
    """Per round, from the last session's await: to each session's next prompt queued, and to the first (ms)."""
    awaits, every, first, waiting = 0, [], [], None
    for now, line in stamps:
        words = line.split()
        if len(words) < 3 or not words[1].startswith("s"):
            continue
        if words[2] == "await":
            awaits += 1
            if awaits % n == 0:
                waiting, fresh = now, True
        elif words[2:4] == ["prompt", "queued"] and waiting is not None:
            every.append((now - waiting) * 1000)
            if fresh:
                first.append(every[-1])
                fresh = False
    return every, first


@dataclass
class Options:
    sessions: int
    rounds: int
    agent: str
    server_state: str | None
    profile: str | None
    profile_server: str | None
    conductor_dir: str | None


def spied(argv: list[str], out: str) -> list[str]:
    return [PYSPY, "record", "-r", "500", "-f", "raw" if out.endswith(".txt") else "flamegraph", "-o", out, *argv]


def run(opts: Options, poll: float | None) -> tuple[list[float], list[float]]:
    base = Path(tempfile.mkdtemp(prefix="condb."))
    state = Path(tempfile.mkdtemp(prefix="condb.", dir=opts.server_state)) if opts.server_state else None
    (base / "config.toml").write_text('[backends.instant]\nkind = "command"\nargv = ["true"]\n')
    (base / "work").mkdir()
    backend = "sim" if opts.agent == "sim" else "instant"
    (base / "bench.toml").write_text(workflow(opts.sessions, opts.rounds, base / "work", backend))
    srv = start_server(base, state=state, extra_args=["--config", str(base / "config.toml")], trace=False)
    stamps, stop = [], threading.Event()
    watcher = threading.Thread(target=observe, args=(srv.socket, stamps, stop), daemon=True)
    spy = None
    try:
        watcher.start()
        argv = [sys.executable, "-m", "conductor", "run", "-a", srv.address, "--state", str(base / "st"),
                *(["--poll", str(poll)] if poll else []), str(base / "bench.toml")]
        if opts.profile and not poll:
            argv = spied(["--", *argv], opts.profile)
        if opts.profile_server and not poll:
            spy = subprocess.Popen(spied(["-p", str(srv.proc.pid)], opts.profile_server), stdout=subprocess.DEVNULL)
        done = subprocess.run(argv, capture_output=True, text=True, cwd=opts.conductor_dir or REPO_ROOT,
                              env=os.environ | {"PYTHONPATH": str(REPO_ROOT)}, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"conductor failed: {done.stdout}{done.stderr[-2000:]}")
        time.sleep(0.2)  # let the observer take the last lines (a benchmark, not a test)
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file and ends
            spy.wait(60)
        stop.set()
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)
        if state:
            shutil.rmtree(state, ignore_errors=True)
    return reaction(stamps, opts.sessions)


def report(label: str, samples: tuple[list[float], list[float]]) -> None:
    for what, values in zip(("every prompt", "first prompt"), samples):
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"{label}, await -> {what}: {len(values)} samples, median {statistics.median(values):.1f} ms, "
              f"p99 {p99:.1f} ms, max {values[-1]:.1f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--poll", type=float, default=1.0, help="the polling interval of the second run (0: skip it)")
    p.add_argument("--poll-rounds", type=int, default=10, help="rounds of the polling run (each takes a poll or two)")
    p.add_argument("--agent", choices=["sim", "true"], default="sim",
                   help="sim: the server's simulated agent (a turn of about 60 ms, no process); "
                        "true: a command backend running `true`, one process per turn")
    p.add_argument("--server-state", metavar="DIR", help="keep the server's state under DIR (/dev/shm: free fsyncs)")
    p.add_argument("--profile", metavar="FILE", help="py-spy the blocking run's conductor into FILE (.svg or .txt)")
    p.add_argument("--profile-server", metavar="FILE", help="py-spy the blocking run's server into FILE")
    p.add_argument("--conductor-dir", metavar="DIR", help="run the conductor package in DIR (another commit's)")
    args = p.parse_args()
    opts = Options(args.sessions, args.rounds, args.agent, args.server_state, args.profile, args.profile_server,
                   args.conductor_dir)
    report(f"blocking, {args.sessions} sessions", run(opts, None))
    if args.poll:
        opts.rounds = args.poll_rounds
        report(f"polling every {args.poll:g} s, {args.sessions} sessions", run(opts, args.poll))


if __name__ == "__main__":
    main()
