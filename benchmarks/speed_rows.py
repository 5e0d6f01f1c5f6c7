"""The issue's table rows that the C client measures on both servers, interleaved.

Each repetition runs the row on anvilfs, then on diod (then on the floor
server, with --floor), and takes their ratios; the figure is the median of the per-repetition ratios, so a change of
machine load between repetitions moves both servers' numbers alike.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cbench import Result, run_clients
from report import Target, figure, say, spread
from servers import Server


@dataclass(frozen=True)
class Row:
    title: str
    mode: str           # ninep_bench's mode
    rpcs: int           # 9P round trips per operation (for server CPU per request)
    procs: int = 1      # client processes, one connection each
    args: tuple[str, ...] = ()
    ratio_target: Target | None = None   # anvilfs rate / diod rate
    time_target: Target | None = None    # anvilfs ms per operation


ROWS = {
    "status1": Row("status reads, 1 connection (walk+lopen+read+read+clunk of sNNNN/status, 1,000 round robin)",
                   "read", 5, ratio_target=Target(">=", 1.2, "x")),
    "status8": Row("status reads, 8 connections (8 client processes)", "read", 5, procs=8,
                   ratio_target=Target(">=", 0.8, "x")),
    "null": Row("null RPC (Twalk clone nwname 0 + Tclunk), 1 connection", "null", 2,
                ratio_target=Target(">=", 1.0, "x")),
    "poll100": Row("poll of 100 sessions pipelined by phase (100 walks, 100 lopens, 100 reads, 100 clunks)",
                   "phased", 400, args=("-n", "100"), time_target=Target("<=", 3.0, " ms")),
}


def measure_row(row: Row, binary: Path, servers: Sequence[Server], reps: int, seconds: float,
                pin: Sequence[str]) -> dict[str, list[Result]]:
    """`reps` repetitions, each server in turn within each; prints each repetition."""
    got: dict[str, list[Result]] = {s.name: [] for s in servers}
    for rep in range(1, reps + 1):
        parts = []
        for server in servers:
            r = run_clients(binary, server, row.mode, procs=row.procs, seconds=seconds, args=row.args, pin=pin)
            got[server.name].append(r)
            parts.append(f"{server.name} {r.rate:8.1f}/s {1e3 / r.rate * row.procs:7.3f} ms/op "
                         f"(p99 {r.stat('p99_us') / 1e3:6.3f}; server {r.server_us_per_op:7.1f} cpu-us/op)")
        ratios = "".join(f"  {name}/diod {got[name][-1].rate / got['diod'][-1].rate:.2f}"
                         for name in got if name != "diod" and "diod" in got)
        say(f"    rep {rep}: " + "  ".join(parts) + ratios)
    return got


def summarise(row: Row, got: dict[str, list[Result]]) -> None:
    """Medians over the repetitions, each figure with its target."""
    for name, results in got.items():
        rates = [r.rate for r in results]
        us = [1e6 / r.rate * row.procs for r in results]   # wall time of one operation on one connection
        figure(f"{name}: operations/s", statistics.median(rates), "/s", None, f"reps {spread(rates)}")
        target = row.time_target if name == "anvilfs" else None
        if row.time_target:
            figure(f"{name}: ms per operation", statistics.median(us) / 1e3, "ms", target, f"reps {spread([u / 1e3 for u in us])}")
        else:
            per_rpc = f"{statistics.median(us) / row.rpcs:.1f} us per RPC" if row.procs == 1 else "on each connection"
            figure(f"{name}: us per operation", statistics.median(us), "us", None, per_rpc)
        if row.procs == 1:
            cpu = [r.server_us_per_op for r in results]
            figure(f"{name}: server CPU per operation", statistics.median(cpu), "us", None,
                   f"{statistics.median(cpu) / row.rpcs:.1f} us per RPC")
    for name, base in (("anvilfs", "diod"), ("floor", "diod"), ("anvilfs", "floor")):
        if name in got and base in got:
            ratios = [a.rate / d.rate for a, d in zip(got[name], got[base])]
            figure(f"{name}/{base} rate, median of the reps' ratios", statistics.median(ratios), "x",
                   row.ratio_target if (name, base) == ("anvilfs", "diod") else None, f"reps {spread(ratios)}")


def warm_up(binary: Path, servers: Sequence[Server], pin: Sequence[str], seconds: float = 1.0) -> None:
    """Read every status file of every server once, unmeasured, as a server that has run a while has been:
    anvilfs builds a session's directory at its first walk (about 50 us each, 1,000 of them in the first
    rep's first pass otherwise), diod and the kernel fill their dentry and inode caches."""
    for server in servers:
        r = run_clients(binary, server, "read", procs=1, seconds=seconds, pin=pin)
        say(f"# warm-up: {server.name} {r.ops:.0f} status reads in {seconds:g} s, not counted")


def run_row(key: str, binary: Path, servers: Sequence[Server], reps: int, seconds: float,
            pin: Sequence[str]) -> None:
    row = ROWS[key]
    say(f"\n## {key}: {row.title}")
    summarise(row, measure_row(row, binary, servers, reps, seconds, pin))
