"""Benchmark: how long a server takes to come back with N sessions in its state (run by hand; prints numbers).

    .venv/bin/python benchmarks/restart.py [--sessions 1000] [--turns 2] [--repeat 5] [--state DIR]

Makes N sim sessions in an App on a state directory on the disk (each with
T turns answered and one prompt left queued, the transcript and `out` they
leave), stops it cleanly, then starts an App on it again R times and prints
the time from the App's construction to `run` having started (the database
opened, every session read and restored, its agent adopted or its runner
started): median and worst. Then the same for `anvilfs serve` as a process,
from its start to its first answered 9P read of `list` (Python's start and
the imports included), beside the same with an empty state. Issue 33 asks for a restart with 1,000 sessions
under 1 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from anvilfs.app import App
from anvilfs.client import Client, dial, resolve
from anvilfs.client.address import AddressError
from anvilfs.sessions import SessionLimits, State

LIMITS = SessionLimits(max_sessions=100000)


async def populate(state: Path, sessions: int, turns: int) -> None:
    async with trio.open_nursery() as nursery:
        app = App(state_dir=state, limits=LIMITS)
        await nursery.start(app.run)
        made = [app.sessions.new("sim", "/tmp", name=f"b{i}") for i in range(sessions)]
        for turn in range(turns):
            for s in made:
                app.sessions.submit(s.name, f"question {turn} for {s.name}", "bench")
            while any(s.turn_count <= turn or s.state is not State.AWAIT for s in made):
                await trio.sleep(0.05)
        for s in made:
            app.sessions.submit(s.name, "sim:hang", "bench")  # the turn in progress at the stop
            app.sessions.submit(s.name, "left in the queue", "bench")
        while any(s.state is not State.RUNNING for s in made):
            await trio.sleep(0.05)
        nursery.cancel_scope.cancel()


async def start_once(state: Path) -> float:
    began = time.perf_counter()
    async with trio.open_nursery() as nursery:
        app = App(state_dir=state, limits=LIMITS, paused=True)
        await nursery.start(app.run)
        took = time.perf_counter() - began
        nursery.cancel_scope.cancel()
    return took


def serve_once(base: Path) -> float:
    ns = base / "ns"
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(ns), "--state",
                             str(base / "state"), "--paused"], stderr=subprocess.DEVNULL,
                            env=os.environ | {"XDG_CONFIG_HOME": str(base / "xdg")})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                client = Client(dial(resolve("x", f"unix!{ns / 'agent'}")))
            except (OSError, AddressError):
                time.sleep(0.005)  # polling another process's start, bounded by the deadline
                continue
            try:
                client.read_file("list")
            finally:
                client.close()
            return time.perf_counter() - began
        raise SystemExit("the server did not answer within 60 s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--state", help="a directory to work in (default: a new one under $TMPDIR)")
    args = parser.parse_args()
    base = Path(args.state or tempfile.mkdtemp(prefix="anvrestart."))
    try:
        made = time.perf_counter()
        trio.run(populate, base / "state", args.sessions, args.turns)
        size = sum(p.stat().st_size for p in (base / "state").glob("anvilfs.db*"))
        print(f"{args.sessions} sessions, {args.turns} turns each, made in {time.perf_counter() - made:.1f} s; "
              f"database {size / 1e6:.1f} MB")
        runs = [trio.run(start_once, base / "state") for _ in range(args.repeat)]
        print(f"App start (restore) with {args.sessions} sessions: median {statistics.median(runs) * 1000:.0f} ms, "
              f"worst {max(runs) * 1000:.0f} ms over {len(runs)} starts ({', '.join(f'{r * 1000:.0f}' for r in runs)})")
        serves = [serve_once(base) for _ in range(args.repeat)]
        empty = base / "empty"
        (empty / "state").mkdir(parents=True, mode=0o700)
        bare = [serve_once(empty) for _ in range(args.repeat)]
        print(f"anvilfs serve until its first answer: median {statistics.median(serves) * 1000:.0f} ms, "
              f"worst {max(serves) * 1000:.0f} ms (with no session: median {statistics.median(bare) * 1000:.0f} ms)")
    finally:
        if not args.state:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
