"""Lanes (`each`): every developer's pipeline goes at its own pace, each prompt once, across SIGKILLs too.

A real server, real command agents (tests/fakes/review_agent.py), the
conductor as a process; the workflow is lanes_flow.py's: lane devN passes
its gate in round N, reports to the shared reviewer and finishes. The
reviewer's prompts come in the order the lanes finish, which a restart may
change, so they are compared sorted; everything else to the byte.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import tempfile
from pathlib import Path

from crashing import NEVER, kill_repeatedly, points
from harness.server import REPO_ROOT
from lanes_flow import DEVS, NAMES, expected_prompts, sorted_rev, write_workflow
from review_cycle import TIMEOUT, Events, conductor_argv, prompts, release, review_server, run_conductor, transcripts

KILLS = 8
OUTSIDE = (3, 6)


def test_lanes_of_different_lengths_send_each_prompt_once_and_the_each_ends_when_all_are_done() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        done = run_conductor(srv, write_workflow(base), base / "conductor")
        why = f"{done.stdout}\n{done.stderr}\n{srv.trace_tail(40)}"
        assert done.returncode == 0 and done.stdout.startswith("done:"), why
        assert sorted_rev(prompts(srv, NAMES)) == expected_prompts(), why
        logs = transcripts(srv, NAMES)
        assert "You said: [fake developer dev3] answering: [conductor lanes run t1 lane dev3 round 2 step ask]" \
            in logs["dev3"], "a lane's prompt must carry its own session's out"
        assert "a finished lane sends nothing more" not in "".join(logs.values()), why
        for dev in DEVS:
            assert f"gate tests[{dev}]@{dev[3:]}: " in done.stderr, f"the lane's keys name it:\n{done.stderr}"


def test_a_lane_held_at_its_gate_holds_no_other_lane_and_the_status_counts_them() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    fifo = base / "hold"
    os.mkfifo(fifo)
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        events = Events(srv)
        proc = subprocess.Popen(conductor_argv(srv, write_workflow(base, hold=fifo), base / "conductor"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT, text=True)
        try:
            # dev3 is held in round 1's gate while dev1 and dev2 go through their rounds, report and finish
            events.until(" conductor-lanes running workflow=lanes run=t1 step=work lanes=3 waiting=1 done=2\n")
            held = prompts(srv, NAMES)
            release(fifo)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            proc.kill()
        assert proc.returncode == 0 and out.startswith("done:"), f"{out}{err}"
        head = "[conductor lanes run t1 lane"
        assert held["dev3"] == [f"{head} dev3 round 1 step ask]"], held
        assert held["dev2"] == [f"{head} dev2 round 1 step ask]", f"{head} dev2 round 2 step ask]"], held
        assert sorted(held["rev"]) == [f"{head} dev1 step report]", f"{head} dev2 step report]"], held
        assert sorted_rev(prompts(srv, NAMES)) == expected_prompts(), err
        assert other.read_file("conductor-lanes/status") == b"await\n"


def test_a_stop_halts_every_lane_and_a_run_again_resumes_each_where_it_was() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    fifo = base / "hold"
    os.mkfifo(fifo)
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        events, workflow, state = Events(srv), write_workflow(base, hold=fifo), base / "conductor"
        for how in ("stop", "go on"):
            proc = subprocess.Popen(conductor_argv(srv, workflow, state), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=REPO_ROOT, text=True)
            try:
                events.until(" conductor-lanes running workflow=lanes run=t1 step=work lanes=3 waiting=1 done=2\n")
                if how == "stop":
                    other.write_file("conductor-lanes/ctl", b"stop\n")  # dev3's gate is cut short
                else:
                    release(fifo)  # the gate of dev3's round 1 again, then the rest of its lane
                out, err = proc.communicate(timeout=TIMEOUT)
            finally:
                proc.kill()
            if how == "stop":
                assert proc.returncode == 3 and out.startswith("stopped:"), f"{out}{err}"
                other.write_file("conductor-lanes/ctl", b"restart\n")
        assert proc.returncode == 0 and out.startswith("done:"), f"{out}{err}"
        assert sorted_rev(prompts(srv, NAMES)) == expected_prompts(), err


def test_a_failing_lane_fails_the_run_and_cuts_the_other_lanes_short(tmp_path: Path) -> None:
    fifo = tmp_path / "never"
    os.mkfifo(fifo)  # nobody writes it: the other lanes' gates would wait for ever
    (tmp_path / "work").mkdir()
    path = tmp_path / "fail.toml"
    path.write_text(f'''name = "fail"
[sessions.dev1]
backend = "developer"
cwd = "{tmp_path / 'work'}"
[sessions.dev2]
backend = "developer"
cwd = "{tmp_path / 'work'}"
[[steps]]
id = "work"
kind = "each"
sessions = ["dev1", "dev2"]
  [[steps.steps]]
  id = "ask"
  kind = "prompt"
  to = ["{{session}}"]
  text = "Work, {{session}}."
  [[steps.steps]]
  id = "answered"
  kind = "wait"
  sessions = ["{{session}}"]
  [[steps.steps]]
  id = "tests"
  kind = "gate"
  run = ["sh", "-c", '[ "$CONDUCTOR_LANE" != dev1 ] || exit 1; read x < {fifo}']
[[steps]]
id = "after"
kind = "prompt"
to = ["dev1"]
text = "not sent: the run failed"
''')
    with review_server(tmp_path) as srv:
        done = run_conductor(srv, path, tmp_path / "conductor", timeout=TIMEOUT)
        assert done.returncode == 1 and done.stdout.startswith("failed: tests[dev1]: gate chose fail"), done
        got = prompts(srv, ["dev1", "dev2"])
        assert got == {d: [f"[conductor fail run t1 lane {d} step ask]"] for d in ("dev1", "dev2")}, got


def test_an_each_in_a_repeat_runs_its_lanes_again_each_round(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    path = tmp_path / "again.toml"
    path.write_text(f'''name = "again"
[sessions.dev1]
backend = "developer"
cwd = "{tmp_path / 'work'}"
[sessions.dev2]
backend = "developer"
cwd = "{tmp_path / 'work'}"
[[steps]]
id = "loop"
kind = "repeat"
max_rounds = 2
exhausted = "next"
  [[steps.steps]]
  id = "work"
  kind = "each"
  sessions = ["dev1", "dev2"]
    [[steps.steps.steps]]
    id = "ask"
    kind = "prompt"
    to = ["{{session}}"]
    text = "Work round {{round}}, {{session}}."
    [[steps.steps.steps]]
    id = "answered"
    kind = "wait"
    sessions = ["{{session}}"]
''')
    with review_server(tmp_path) as srv:
        done = run_conductor(srv, path, tmp_path / "conductor", timeout=TIMEOUT)
        assert done.returncode == 0, done
        assert "ask[dev2]@2: prompt" in done.stderr, done.stderr
        got = prompts(srv, ["dev1", "dev2"])
        assert got == {d: [f"[conductor again run t1 lane {d} round {r} step ask]" for r in (1, 2)]
                       for d in ("dev1", "dev2")}, got


def uninterrupted() -> tuple[dict[str, str], int]:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base, trace=False) as srv:
        done = run_conductor(srv, write_workflow(base), base / "conductor", env=NEVER)
        assert done.returncode == 0, done.stderr
        return comparable(transcripts(srv, NAMES)), points(done.stderr)


def comparable(logs: dict[str, str]) -> dict[str, str]:
    """The reviewer's log as its prompts and answers sorted (the lanes' order of finishing may differ)."""
    blocks = re.split(r"(?m)^(?=--- prompt )", logs["rev"])
    return logs | {"rev": "".join(sorted(re.sub(r"(?m)^--- (prompt|answer) \d+ ", r"--- \1 N ", b) for b in blocks))}


def test_sigkills_in_the_lanes_leave_the_transcripts_of_an_uninterrupted_run() -> None:
    want, total = uninterrupted()
    seed = int(os.environ.get("CONDUCTOR_CRASH_SEED", random.randrange(1 << 30)))
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow, state = write_workflow(base), base / "conductor"
        history = [f"seed {seed} (CONDUCTOR_CRASH_SEED={seed} repeats it)",
                   *kill_repeatedly(srv, workflow, state, total, random.Random(seed), KILLS, OUTSIDE)]
        done = run_conductor(srv, workflow, state)
        print("\n".join(history))  # shown when the test fails
        why = "\n".join(history) + f"\n{done.stdout}{done.stderr}"
        assert done.returncode == 0 and done.stdout.startswith("done:"), why
        assert sorted_rev(prompts(srv, NAMES)) == expected_prompts(), why
        assert comparable(transcripts(srv, NAMES)) == want, why
