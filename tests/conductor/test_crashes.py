"""Killing the conductor, or the server, repeats no prompt and skips no step.

The conductor runs as a real process. It is SIGKILLed ten times in one
review cycle and started again each time on the same --state: seven times
by itself at a crash point (conductor/crash.py: each durable record, a
prompt's bytes written but not closed, its Tclunk sent but not answered),
three times from outside as soon as it says it begins a step. The seven
points are drawn (seeded, the seed printed on failure) from all the points
an uninterrupted run passes, counted across the restarts, so the kills
spread over the whole cycle and all land before its end. The transcripts
must then be the uninterrupted run's, to the byte (times aside). Three
reviewers, not five: the cycle has the same shape and each restart costs
a process start.
"""

from __future__ import annotations

import os
import random
import re
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from harness.server import REPO_ROOT, start_server
from review_cycle import (conductor_argv, expected_prompts, prompts, review_server, reviewer_names, run_conductor,
                          transcripts, write_workflow)

REVIEWERS = 3
NAMES = ["dev", *reviewer_names(REVIEWERS)]
KILLS = 10
OUTSIDE = (2, 5, 8)  # which of the kills come from outside
STEP_LINE = re.compile(r"^conductor: \S+: \w+$")  # "conductor: fix@1: prompt" as a step begins
POINT_LINE = re.compile(r"^conductor: crash point \d+ ")
NEVER = {"ANVILFS_CONDUCTOR_CRASH_AT": str(10**9)}  # count the points, die at none


def points(stderr: str) -> int:
    return sum(bool(POINT_LINE.match(line)) for line in stderr.splitlines())


def uninterrupted() -> tuple[dict[str, str], int]:
    """The transcripts of a run nobody kills, and how many crash points it passes."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base, trace=False) as srv:
        done = run_conductor(srv, write_workflow(base, REVIEWERS), base / "conductor", env=NEVER)
        assert done.returncode == 0, done.stderr
        return transcripts(srv, NAMES), points(done.stderr)


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


def test_ten_sigkills_of_the_conductor_leave_the_transcripts_of_an_uninterrupted_run() -> None:
    want, total = uninterrupted()
    seed = int(os.environ.get("CONDUCTOR_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    # distinct points of the whole run, the last two before its final record (a count may lag by one)
    at = sorted(rng.sample(range(1, total - 1), KILLS - len(OUTSIDE)))
    base = Path(tempfile.mkdtemp(prefix="cond."))
    history, passed = [f"seed {seed} (CONDUCTOR_CRASH_SEED={seed} repeats it); {total} points in a whole run"], 0
    with review_server(base) as srv:
        workflow, state = write_workflow(base, REVIEWERS), base / "conductor"
        for kill in range(KILLS):
            if kill in OUTSIDE:
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
            assert status == -signal.SIGKILL, "the cycle ended before ten kills:\n" + "\n".join(history)
        done = run_conductor(srv, workflow, state)
        print("\n".join(history))  # shown when the test fails
        why = "\n".join(history) + f"\n{done.stdout}{done.stderr}"
        assert done.returncode == 0 and done.stdout.startswith("done:"), why
        assert prompts(srv, NAMES) == expected_prompts(REVIEWERS), why
        assert transcripts(srv, NAMES) == want, why
        # its own session, found again by each restart: one turn (the status writes are idempotent), one answer
        log = transcripts(srv, ["conductor-review"])["conductor-review"]
        assert log.count("--- begun ") == 1 and log.count("--- answer ") == 1 and "done: " in log, log


def test_a_server_killed_and_restarted_mid_cycle_loses_and_repeats_no_prompt() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow, state = write_workflow(base, REVIEWERS), base / "conductor"
        proc = subprocess.Popen(conductor_argv(srv, workflow, state), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=REPO_ROOT, text=True)
        try:
            seen, end = "", time.monotonic() + 30
            while "fix@1: prompt" not in seen:
                ready, _, _ = select.select([proc.stderr], [], [], max(end - time.monotonic(), 0))
                line = proc.stderr.readline() if ready else ""
                assert line, f"the conductor did not reach fix@1 within 30 s (or ended); it said:\n{seen}"
                seen += line
            srv.stop(sig=signal.SIGKILL)  # mid-cycle: the developer's prompt of round 1 is on its way
            srv.proc = start_server(base, namespace=srv.namespace, state=srv.state, extra_args=[
                "--config", str(base / "config.toml")], log_name="server2.trace").proc
            out, err = proc.communicate(timeout=50)
        finally:
            proc.kill()
        why = f"{seen}{err}\n{out}\n{srv.trace_tail(60)}"
        assert proc.returncode == 0 and out.startswith("done:"), why
        got = prompts(srv, NAMES)
        for name, firsts in got.items():
            assert len(firsts) == len(set(firsts)), f"{name} got a prompt twice: {firsts}\n{why}"
        assert got == expected_prompts(REVIEWERS), why
