"""How long one `anvilfs read agent/s1/status` process takes, end to end.

Run by hand (not by CI); it prints numbers and never asserts on them:

    .venv/bin/python benchmarks/client_start.py [--runs 20] [--rounds 3] [--script PATH ...]

It starts `python -m anvilfs serve` in a temporary directory, makes one sim
session `s1`, then times whole client processes (fork, exec, imports, dial,
handshake, walk, open, read, clunk, exit) with time.perf_counter around
subprocess.run, the commands interleaved run by run so load on the machine
falls on all of them alike. Each command must print the status, or the run
stops. A baseline `python -c pass` shows what the interpreter alone costs.
Besides wall time it prints each process's CPU time (user + system, from
getrusage of the children), which a busy machine disturbs much less.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from servers import stop  # beside this file

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("anvilfs")  # the pip console-script wrapper


def commands(scripts: list[str]) -> dict[str, list[str]]:
    """The commands timed; --script adds another install's console script (e.g. not editable)."""
    read = ["read", "agent/s1/status"]
    found = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -m anvilfs read": [sys.executable, "-m", "anvilfs", *read],
    }
    if SCRIPT.exists():
        found["anvilfs read (console script)"] = [str(SCRIPT), *read]
    for script in scripts:
        found[f"{script} read"] = [script, *read]
    return found


def start_server(base: Path) -> subprocess.Popen:
    ns = base / "ns"
    proc = subprocess.Popen(
        [sys.executable, "-m", "anvilfs", "serve", "--namespace", str(ns), "--state", str(base / "state")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
        env=os.environ | {"XDG_CONFIG_HOME": str(base / "xdg")})  # fmt: skip
    deadline = time.monotonic() + 20
    while True:
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(str(ns / "agent"))
                return proc
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    raise SystemExit("anvilfs serve did not come up within 20 s") from None
        time.sleep(0.05)  # poll interval, bounded by the deadline


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one process."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    r = subprocess.run(argv, env=env, capture_output=True, cwd="/", timeout=30)
    elapsed, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if r.returncode != 0 or (argv[-1].endswith("status") and not r.stdout):
        raise SystemExit(f"{argv} -> {r.returncode}: {r.stderr.decode(errors='replace')}")
    return elapsed, cpu


def measure(cmds: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, list[tuple[float, float]]]:
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, argv in cmds.items():
            times[name].append(run_once(argv, env))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="processes per command and round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; the table gives each round's median")
    ap.add_argument("--script", action="append", default=[], help="also time this `anvilfs` console script")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="anvil-bench."))
    env = os.environ | {"NAMESPACE": str(base / "ns")}
    proc = start_server(base)
    try:
        subprocess.run([sys.executable, "-m", "anvilfs", "write", "agent/ctl", "new sim /tmp name=s1"],
                       env=env, check=True, timeout=30)
        print(f"# {args.rounds} rounds of {args.runs} runs; load {os.getloadavg()[0]:.2f}; Python {sys.version.split()[0]}")
        print(f"{'command':40} {'wall ms, median per round':>27} {'min':>6} {'cpu ms (median)':>16}")
        rounds = [measure(commands(args.script), args.runs, env) for _ in range(args.rounds)]
        for name in rounds[0]:
            walls = [[wall for wall, _ in r[name]] for r in rounds]
            medians = " ".join(f"{statistics.median(w) * 1000:6.1f}" for w in walls)
            best = min(map(min, walls)) * 1000
            cpu = statistics.median(c for r in rounds for _, c in r[name]) * 1000
            print(f"{name:40} {medians:>27} {best:6.1f} {cpu:16.1f}")
    finally:
        stop(proc)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
