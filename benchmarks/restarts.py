"""Benchmark: many restarts of a full tree, each placed against the host's speed (issue 32, item 6; by hand).

    .venv/bin/python benchmarks/restarts.py --tree DIR [--count 40]   # a tree kept by reads.py --keep
    .venv/bin/python benchmarks/restarts.py [--beads 10000] [--convoys 1000] [--sessions 1000] [--count 40]

reads.py restarts a tree twice, and the host here drifts between a faster and a 1.6 times slower state
within 10-30 s (benchmarks/host.py), so its two restarts seldom say which state they ran in. This
restarts the same state COUNT times (SIGTERM, start, time to the first `list` with every session, as
reads.py's `restart`) and times host.py's fixed workload right before the stop and right after the
`list`: a restart with the host slower at both ends most likely ran slow from end to end (it takes
1-2 s, the state lasts longer). Each restart's line, then the worst of all and the worst of those slow
at both ends, against the target (under 2 s). Before the first: one start on the copy (its files new to
the parse cache: no restart) and one restart (the rows the copy's start made are racy), not counted.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import tempfile
import time
from pathlib import Path

from host import SLOWER, REFERENCE_MS, workload_ms  # benchmarks/host.py
from tree_server import build, connect, copy_tree, cpu_s, restart, start, up  # benchmarks/tree_server.py

TARGET_S = 2.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="a tree kept by reads.py --keep (else one is built)")
    ap.add_argument("--beads", type=int, default=10000)
    ap.add_argument("--convoys", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--count", type=int, default=40, help="restarts measured")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="anvr.", dir="/tmp"))
    proc = None
    try:
        if args.tree:
            args.sessions = copy_tree(args.tree, base)["sessions"]
            proc = start(base)
            up(base, args.sessions, time.perf_counter())
        else:
            proc = start(base)
            with connect(base, time.monotonic() + 30) as client:
                build(client, args)
        proc, _ = restart(base, proc, args.sessions)  # not counted: the copy's rows are racy at this one
        rows = []
        for n in range(1, args.count + 1):
            before = workload_ms()
            proc, took = restart(base, proc, args.sessions)
            cpu, after = cpu_s(proc), workload_ms()
            slow = min(before, after) > SLOWER * REFERENCE_MS
            rows.append((took, slow))
            print(f"restart {n:3d}: {took:.2f} s, {cpu:.2f} s of CPU; the workload {before:.1f} ms before, {after:.1f} ms "
                  f"after{': slower at both ends' if slow else ''}{'' if took < TARGET_S else '   MISS'}", flush=True)
        report(rows)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def report(rows: list[tuple[float, bool]]) -> None:
    every = [took for took, _ in rows]
    slow = [took for took, was_slow in rows if was_slow]
    print(f"{len(every)} restarts: median {statistics.median(every):.2f} s, the longest {max(every):.2f} s")
    if slow:
        print(f"{len(slow)} with the host slower (over {SLOWER} times its {REFERENCE_MS} ms) at both ends: median "
              f"{statistics.median(slow):.2f} s, the longest {max(slow):.2f} s")
    else:
        print(f"none with the host slower (over {SLOWER} times its {REFERENCE_MS} ms) at both ends")
    print(f"restart under {TARGET_S:.0f} s: {'met' if max(every) < TARGET_S else 'MISS'} (the longest {max(every):.2f} s)")


if __name__ == "__main__":
    main()
