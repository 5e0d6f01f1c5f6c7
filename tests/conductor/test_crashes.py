"""Killing the conductor, or the server, repeats no prompt and skips no step.

The conductor runs as a real process. It is SIGKILLed ten times in one
review cycle and started again each time on the same --state: seven times
by itself at a crash point, three times from outside as soon as it says it
begins a step (crashing.py; the points seeded, the seed printed on
failure). The transcripts must then be the uninterrupted run's, to the
byte (times aside). Three reviewers, not five: the cycle has the same
shape and each restart costs a process start.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from conductor.markers import turns_in_log
from crashing import NEVER, kill_repeatedly, points
from harness.server import REPO_ROOT, start_server
from review_cycle import (Events, conductor_argv, expected_prompts, prompts, review_server, reviewer_names,
                          run_conductor, transcripts, write_workflow)

REVIEWERS = 3
NAMES = ["dev", *reviewer_names(REVIEWERS)]
KILLS = 10
OUTSIDE = (2, 5, 8)  # which of the kills come from outside


def uninterrupted() -> tuple[dict[str, str], int]:
    """The transcripts of a run nobody kills, and how many crash points it passes."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base, trace=False) as srv:
        done = run_conductor(srv, write_workflow(base, REVIEWERS), base / "conductor", env=NEVER)
        assert done.returncode == 0, done.stderr
        return transcripts(srv, NAMES), points(done.stderr)


def test_ten_sigkills_of_the_conductor_leave_the_transcripts_of_an_uninterrupted_run() -> None:
    want, total = uninterrupted()
    seed = int(os.environ.get("CONDUCTOR_CRASH_SEED", random.randrange(1 << 30)))
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow, state = write_workflow(base, REVIEWERS), base / "conductor"
        history = [f"seed {seed} (CONDUCTOR_CRASH_SEED={seed} repeats it)",
                   *kill_repeatedly(srv, workflow, state, total, random.Random(seed), KILLS, OUTSIDE)]
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
        # The kill may land while the developer's turn runs: that turn is lost (SPEC §5), and the conductor asks
        # its prompt again (conductor/README.md, wait): in the log twice, answered once. Any other repeat fails.
        turns = {name: turns_in_log(log) for name, log in transcripts(srv, NAMES).items()}
        got = {name: [line for line, lost in said if not lost] for name, said in turns.items()}
        for name, firsts in got.items():
            assert len(firsts) == len(set(firsts)), f"{name} got a prompt twice: {firsts}\n{why}"
            lost = [line for line, was_lost in turns[name] if was_lost]
            assert set(lost) <= set(firsts), f"{name}: a lost turn's prompt was not asked again: {lost}\n{why}"
        assert got == expected_prompts(REVIEWERS), why


def test_a_conductor_killed_after_a_prompt_went_and_before_its_record_did_sends_it_once() -> None:
    """A prompt step's record goes to disk beside its delivery, not before it. Killed with the first
    step's record held back (ANVILFS_CONDUCTOR_HOLD_BEGINS) once its prompts are queued, the conductor's
    record does not show the step begun; the resumed one reads the reviewers' queues and logs before it
    sends, and sends nothing twice."""
    from conductor.journal import read_record

    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow, state = write_workflow(base, REVIEWERS), base / "conductor"
        events = Events(srv)
        proc = subprocess.Popen(conductor_argv(srv, workflow, state), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, cwd=REPO_ROOT, text=True,
                                env=os.environ | {"ANVILFS_CONDUCTOR_HOLD_BEGINS": "5"})
        try:
            names = reviewer_names(REVIEWERS)
            while not all(f"{name} prompt queued" in events.seen for name in names):
                events.until(" prompt queued")  # in whichever order they come
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            proc.kill()
        record = read_record(state, "review")
        assert record is not None and "review@1" not in record["pending"], "the test needs its record held back"
        done = run_conductor(srv, workflow, state)
        assert done.returncode == 0 and done.stdout.startswith("done:"), done.stdout + done.stderr
        assert "was already in" in done.stderr, done.stderr
        assert prompts(srv, NAMES) == expected_prompts(REVIEWERS)
