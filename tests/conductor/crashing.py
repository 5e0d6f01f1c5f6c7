"""SIGKILLing the conductor at chosen points of a run, for the crash tests.

    total = points(run_conductor(..., env=NEVER).stderr)      # the crash points an uninterrupted run passes
    history = kill_repeatedly(srv, workflow, state, total, random.Random(seed), kills=10, outside=(2, 5, 8))

Most kills are the conductor's own at a crash point (conductor/crash.py:
each durable record, a prompt's bytes written but not closed, its Tclunk
sent but not answered); those in `outside` come from outside as soon as it
says it begins its first or second step. The points are drawn from all the
points of an uninterrupted run, counted across the restarts, so the kills
spread over the whole run and all land before its end.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from harness.server import REPO_ROOT, AnvilServer
from review_cycle import conductor_argv, run_conductor

STEP_LINE = re.compile(r"^conductor: \S+: \w+$")  # "conductor: fix@1: prompt" as a step begins
POINT_LINE = re.compile(r"^conductor: crash point \d+ ")
NEVER = {"ANVILFS_CONDUCTOR_CRASH_AT": str(10**9)}  # count the points, die at none


def points(stderr: str) -> int:
    return sum(bool(POINT_LINE.match(line)) for line in stderr.splitlines())


def kill_at_its_step(argv: list[str], steps: int, deadline: float = 30) -> tuple[int, str]:
    """Start the conductor, SIGKILL it as soon as it says it begins its `steps`th step: (exit status, stderr)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO_ROOT, text=True,
                            env=os.environ | NEVER)
    seen, lines, end = 0, [], time.monotonic() + deadline
    try:
        while seen < steps:
            ready, _, _ = select.select([proc.stderr], [], [], max(end - time.monotonic(), 0))
            line = proc.stderr.readline() if ready else ""
            if not line:
                break  # it ended (finished before that step) or the deadline passed
            lines.append(line)
            seen += bool(STEP_LINE.match(line))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        lines.append(proc.stderr.read())  # what it said before the signal landed
        proc.stderr.close()
    return proc.returncode, "".join(lines)


def kill_repeatedly(srv: AnvilServer, workflow: Path, state: Path, total: int, rng, kills: int,
                    outside: tuple[int, ...]) -> list[str]:
    """Run the conductor `kills` times on one record, each run SIGKILLed; what each kill was, one line each."""
    # distinct points of the whole run, the last two before its final record (a count may lag by one)
    at = sorted(rng.sample(range(1, total - 1), kills - len(outside)))
    history, passed = [f"{total} points in a whole run"], 0
    for kill in range(kills):
        if kill in outside:
            steps = rng.randint(1, 2)
            status, err = kill_at_its_step(conductor_argv(srv, workflow, state), steps)
            how = f"from outside at its step {steps}"
        else:
            k = max(at.pop(0) - passed, 1)
            r = run_conductor(srv, workflow, state, env={"ANVILFS_CONDUCTOR_CRASH_AT": str(k)})
            status, err, how = r.returncode, r.stderr, f"at its crash point {k}"
        passed += points(err)
        last = [line for line in err.splitlines() if POINT_LINE.match(line)][-1:]
        history.append(f"kill {kill}: {how}: exit {status}: {last}")
        assert status == -signal.SIGKILL, f"the run ended before {kills} kills:\n" + "\n".join(history)
    return history
