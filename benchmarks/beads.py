"""Benchmark: 10,000 beads (run by hand; prints numbers).

    .venv/bin/python benchmarks/beads.py [--beads 10000] [--completes 1000]

Starts a real `anvilfs serve` on a fresh state directory and, over one 9P
connection from this process (the project's blocking client):

- creates N beads through `beads/ctl`, one Twrite each on one open fid,
  each durable before its answer (its file written and fsynced, and its
  history message committed in STATE/anvilfs.db, by the database's writer
  thread): creates per second;
- claims and completes M of them (two Twrites each): verbs per second;
- reads `beads/ready` (about N-M beads) 20 times: median and max ms;
- the server's RSS (VmRSS, VmHWM);
- stops it, starts it again on the same state: time until `beads/list`
  answers with all N beads (server start with N beads).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from anvilfs.ninep import consts as c
from tree_server import connect  # benchmarks/tree_server.py


def start(base: Path) -> subprocess.Popen:
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg")}
    return subprocess.Popen([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"),
                             "--state", str(base / "state")], env=env, stderr=open(base / "server.log", "a"))


def rss(pid: int) -> str:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return f"VmRSS {fields['VmRSS'].strip()}, VmHWM {fields['VmHWM'].strip()}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--beads", type=int, default=10_000)
    ap.add_argument("--completes", type=int, default=1000)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="anvb.", dir="/tmp"))
    proc = start(base)
    try:
        client = connect(base, time.monotonic() + 30)
        fid = client.open("beads/ctl", c.ORDWR)
        t0 = time.perf_counter()
        for i in range(args.beads):
            client.write_chunk(fid, 0, f'new "Task number {i}" worker "do thing {i}"\n'.encode())
        created = time.perf_counter() - t0
        print(f"creates: {args.beads} in {created:.2f} s = {args.beads / created:.0f}/s (durable, one Twrite each)")
        ids = [line.split()[0] for line in client.read_file("beads/list").decode().splitlines()]
        t0 = time.perf_counter()
        for bead in ids[:args.completes]:
            ctl = client.open(f"beads/{bead}/ctl", c.OWRITE)
            client.write_chunk(ctl, 0, b"claim bench lease=3600\n")
            client.write_chunk(ctl, 0, b"complete done\n")
            client.clunk(ctl)
        verbs = time.perf_counter() - t0
        print(f"claim+complete: {args.completes} in {verbs:.2f} s = {2 * args.completes / verbs:.0f} verbs/s "
              f"(with walk/open/clunk: {4 * args.completes / verbs:.0f} requests/s)")
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            ready = client.read_file("beads/ready")
            times.append((time.perf_counter() - t0) * 1000)
        lines = ready.count(b"\n")
        print(f"read beads/ready ({lines} beads, {len(ready)} bytes): median {statistics.median(times):.1f} ms, "
              f"max {max(times):.1f} ms")
        print(f"server memory with {args.beads} beads: {rss(proc.pid)}")
        client.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        t0 = time.perf_counter()
        proc = start(base)
        client = connect(base, time.monotonic() + 60)
        count = client.read_file("beads/list").count(b"\n")
        print(f"restart with {count} beads: {time.perf_counter() - t0:.2f} s to the first answered list "
              f"(python start + load); {rss(proc.pid)}")
        client.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
