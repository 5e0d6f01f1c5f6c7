"""How long one full round of scripts/review-cycle.sh takes with agents that answer at once.

Run by hand (not by CI); it prints numbers and never asserts on them:

    .venv/bin/python benchmarks/review_cycle.py [--rounds 3] [--runs 5] [--rc]

It starts `python -m anvilfs serve` in a temporary directory with two command backends whose
agents answer at once (`sh -c 'cat >/dev/null; echo ...'`): every reviewer always finds an
ISSUE, so every round is full (5 reviewer prompts, 5 waits, 5 outs read, the developer's prompt
and wait) and the script ends with status 1 after --rounds rounds. A first run with MAX=0 makes
the six sessions, untimed. Each timed run is a whole `review-cycle.sh ROUNDS` process; the time
per round is its wall time over ROUNDS, with the CPU time of the script and everything it ran
(getrusage of the children: bash, the anvilfs clients, grep, cat; not the server's).
--rc times scripts/review-cycle.rc (9base's rc) the same way.
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

import client_start  # beside this file: its server start and children's CPU time
from servers import stop

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = {"bash": ["bash", str(REPO / "scripts" / "review-cycle.sh")],
           "rc": ["/usr/lib/plan9/bin/rc", str(REPO / "scripts" / "review-cycle.rc")]}
CONFIG = """\
[backends.instant-reviewer]
kind = "command"
argv = ["sh", "-c", "cat >/dev/null; echo 'ISSUE: found at once'"]
[backends.instant-developer]
kind = "command"
argv = ["sh", "-c", "cat >/dev/null; echo 'fixed at once'"]
"""


def start_server(base: Path) -> subprocess.Popen:
    """client_start.py's server, whose configuration directory is BASE/xdg: the instant backends there."""
    (base / "xdg" / "anvilfs").mkdir(parents=True)
    (base / "xdg" / "anvilfs" / "config.toml").write_text(CONFIG)
    return client_start.start_server(base)


def run(argv: list[str], rounds: int, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of the script; it must end with the rounds run out (status 1)."""
    cpu0, t0 = client_start._children_cpu(), time.perf_counter()
    r = subprocess.run([*argv, str(rounds)], env=env, capture_output=True, text=True, timeout=600)
    elapsed, cpu = time.perf_counter() - t0, client_start._children_cpu() - cpu0
    if r.returncode != 1 or f"{rounds} rounds, and still issues" not in r.stderr:
        raise SystemExit(f"{argv} {rounds} -> {r.returncode}:\n{r.stderr}")
    return elapsed, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="review rounds per run of the script")
    ap.add_argument("--runs", type=int, default=5, help="runs of the script per shell")
    ap.add_argument("--rc", action="store_true", help="also time the rc script")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="anvil-review."))
    bin_dir = Path(sys.executable).parent
    env = os.environ | {"NAMESPACE": str(base / "ns"), "PATH": f"{bin_dir}:{os.environ['PATH']}",
                        "BACKEND": "instant-reviewer", "DEV_BACKEND": "instant-developer", "CWD": "/tmp"}
    proc = start_server(base)
    try:
        shells = ["bash", "rc"] if args.rc else ["bash"]
        run(SCRIPTS["bash"], 0, env)  # makes the sessions
        print(f"# {args.runs} runs of {args.rounds} rounds; load {os.getloadavg()[0]:.2f}; Python {sys.version.split()[0]}")
        print(f"{'script':8} {'s per round (median)':>21} {'fastest':>8} {'cpu s per round':>16}")
        for shell in shells:
            times = [run(SCRIPTS[shell], args.rounds, env) for _ in range(args.runs)]
            walls = [wall / args.rounds for wall, _ in times]
            cpu = statistics.median(c / args.rounds for _, c in times)
            print(f"{shell:8} {statistics.median(walls):21.2f} {min(walls):8.2f} {cpu:16.2f}")
    finally:
        stop(proc)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
