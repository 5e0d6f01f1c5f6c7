"""The conductor as a session of kind external: others see its progress, wait on it, stop and interrupt it.

A real server, a real conductor process, one fake reviewer. The workflow
holds each round at a gate that reads a fifo (`read x < FIFO`), so the test
knows where the run is without timing: while the gate holds, the
conductor's status is that step's, and a stop or interrupt lands in that
step. The test releases the gate by writing a line into the fifo.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from conductor.journal import read_record
from harness.server import REPO_ROOT
from review_cycle import RUN, TIMEOUT, Events, conductor_argv, prompts, release, review_server

HEAD = f"[conductor held run {RUN} round"


def workflow(base: Path, gate: str = "gate", file: str = "held.toml") -> Path:
    """The workflow `held`; its gate reads the fifo `gate` (a run after a SIGKILL gets a fifo of its own:
    the killed conductor's gate process may still be on its way to opening the first)."""
    (base / "work").mkdir(exist_ok=True)
    fifo = base / gate
    os.mkfifo(fifo)
    path = base / file
    path.write_text(f'''name = "held"
[sessions.a]
backend = "reviewer"
cwd = "{base / 'work'}"

[[steps]]
id = "loop"
kind = "repeat"
max_rounds = 2
exhausted = "next"
  [[steps.steps]]
  id = "ask"
  kind = "prompt"
  to = ["a"]
  text = "Review round {{round}}."
  [[steps.steps]]
  id = "answered"
  kind = "wait"
  sessions = ["a"]
  [[steps.steps]]
  id = "hold"
  kind = "gate"
  run = ["sh", "-c", "read x < {fifo}"]
  else = "break"                       # the loop's exit (never taken here)
''')
    return path


def holding(round_: int, run: str = RUN) -> str:
    """The conductor's status while the gate of round `round_` holds."""
    return f"running workflow=held run={run} step=hold round={round_}\n"


def shown(round_: int, run: str = RUN) -> str:
    """Its `events` line then."""
    return f" conductor-held {holding(round_, run)}"


def start(srv, path: Path, state: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(conductor_argv(srv, path, state, *extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO_ROOT, text=True, env=os.environ | (env or {}))


def ended(proc: subprocess.Popen, base: Path) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        unblock(base)  # a gate left behind holds the conductor's stderr open
        out, err = proc.communicate(timeout=TIMEOUT)
        raise AssertionError(f"the conductor did not end within {TIMEOUT}s:\n{out}{err}") from None
    return proc.returncode, out, err


def unblock(base: Path) -> None:
    for fifo in base.glob("gate*"):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no gate reads it


def halted_at_round_1(srv, other, events: Events, base: Path, path: Path, state: Path, ctl: bytes) -> tuple:
    """Start the conductor, write `ctl` to its session's ctl while the gate of round 1 holds; how it ended."""
    proc = start(srv, path, state)
    try:
        events.until(shown(1))
        other.write_file("conductor-held/ctl", ctl)
        return ended(proc, base)
    finally:
        proc.kill()


def released(proc: subprocess.Popen, events: Events, base: Path, run: str = RUN, gate: str = "gate") -> tuple:
    """Release the gate (the fifo `gate`) of each round as the conductor `proc` of run `run` holds there;
    how it ended."""
    try:
        for round_ in (1, 2):
            events.until(shown(round_, run))
            release(base / gate)
        return ended(proc, base)
    finally:
        proc.kill()
        unblock(base)  # a gate of a conductor killed before, if it opened its fifo only after an earlier unblock


def through_both_rounds(srv, events: Events, base: Path, path: Path, state: Path) -> tuple:
    """Start the conductor and release the gate of each round; how it ended."""
    return released(start(srv, path, state), events, base)


def record(state: Path) -> dict:
    return read_record(state, "held")


def test_others_see_the_progress_and_wait_on_the_conductor_until_its_summary() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other, srv.connect("test", timeout=TIMEOUT) as outer:
        events = Events(srv)
        proc = start(srv, workflow(base), base / "state")
        try:
            events.until(shown(1))
            assert other.read_file("conductor-held/status") == holding(1).encode()
            assert b"conductor-held external running conductor " in other.read_file("list")
            # another conductor's read of its wait blocks: the Tread goes out, then a walk's reply comes first
            fid = outer.open("conductor-held/wait", c.OREAD)
            parked = outer.send(m.Tread(tag=0, fid=fid, offset=0, count=8192))
            probe = outer.send(m.Twalk(tag=0, fid=outer.root, newfid=outer.new_fid(), wnames=()))
            assert (type(first := outer.receive()), first.tag) == (m.Rwalk, probe), first
            release(base / "gate")
            events.until(shown(2))
            assert other.read_file("conductor-held/status") == holding(2).encode()
            release(base / "gate")
            reply = outer.receive()  # the parked read's answer, once the run is over
            status, out, err = ended(proc, base)
        finally:
            proc.kill()
        assert (type(reply), reply.tag, reply.data) == (m.Rread, parked, b"await\n"), f"{reply}\n{err}"
        assert status == 0 and out.startswith("done:"), err
        assert other.read_file("conductor-held/out").decode() == f"{out.strip()}\nworkflow held run {RUN}\n"
        assert prompts(srv, ["a"]) == {"a": [f"{HEAD} 1 step ask]", f"{HEAD} 2 step ask]"]}


def test_a_stop_on_its_ctl_stops_the_run_until_a_restart_and_a_run_again() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        events, path, state = Events(srv), workflow(base), base / "state"
        status, out, err = halted_at_round_1(srv, other, events, base, path, state, b"stop\n")
        assert status == 3 and out.startswith("stopped: stop through conductor-held/ctl"), f"{out}{err}"
        assert record(state)["halted"]["outcome"] == "stopped" and record(state)["finished"] is None
        assert prompts(srv, ["a"]) == {"a": [f"{HEAD} 1 step ask]"]}, "a prompt went out after the stop"
        assert other.read_file("conductor-held/status") == b"stopped\n"
        refused = subprocess.run(conductor_argv(srv, path, state), capture_output=True, text=True, cwd=REPO_ROOT,
                                 timeout=TIMEOUT)
        assert refused.returncode == 3 and "write restart to conductor-held/ctl" in refused.stdout, refused
        other.write_file("conductor-held/ctl", b"restart\n")
        status, out, err = through_both_rounds(srv, events, base, path, state)  # the gate of round 1 again
        assert status == 0 and out.startswith("done:"), f"{out}{err}"
        assert "resuming a run that was stopped" in err, err
        assert prompts(srv, ["a"]) == {"a": [f"{HEAD} 1 step ask]", f"{HEAD} 2 step ask]"]}
        assert other.read_file("conductor-held/status") == b"await\n"


def test_an_interrupt_abandons_the_step_it_waits_on_and_a_run_again_does_it_again() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        events, path, state = Events(srv), workflow(base), base / "state"
        status, out, err = halted_at_round_1(srv, other, events, base, path, state, b"interrupt\n")
        assert status == 4 and out.startswith("interrupted: interrupt through conductor-held/ctl"), f"{out}{err}"
        assert record(state)["halted"]["outcome"] == "interrupted" and "hold@1" not in record(state)["done"]
        assert other.read_file("conductor-held/status") == b"await interrupted\n"
        status, out, err = through_both_rounds(srv, events, base, path, state)  # no restart needed
        assert status == 0 and out.startswith("done:"), f"{out}{err}"
        assert prompts(srv, ["a"]) == {"a": [f"{HEAD} 1 step ask]", f"{HEAD} 2 step ask]"]}
        log = other.read_file("conductor-held/log").decode()
        assert log.count("--- begun ") == 2 and log.count("--- answer ") == 1, log  # the second run's turn


def test_a_failed_run_ends_its_turn_in_error_and_no_session_makes_none() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    path = base / "failing.toml"
    path.write_text('name = "failing"\n[[steps]]\nid = "gate"\nkind = "gate"\nrun = ["false"]\n')
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        quiet = subprocess.run(conductor_argv(srv, path, base / "s1", "--no-session"), capture_output=True,
                               text=True, cwd=REPO_ROOT, timeout=TIMEOUT)
        assert quiet.returncode == 1 and b"conductor-failing" not in other.read_file("list"), quiet
        done = subprocess.run(conductor_argv(srv, path, base / "s2"), capture_output=True, text=True,
                              cwd=REPO_ROOT, timeout=TIMEOUT)
        assert done.returncode == 1 and done.stdout.startswith("failed: gate: gate chose fail"), done
        assert other.read_file("conductor-failing/status") == b"error failed: gate: gate chose fail\n"


def test_a_conductor_with_another_record_is_refused_while_the_session_runs_another_run() -> None:
    """Two conductors on one workflow (another host, another --state) would send its prompts twice: the
    second finds the session running another run and sends nothing; a conductor that died leaves it so
    until someone stops and restarts the session, and the other record's run then begins anew."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        events, path, path2 = Events(srv), workflow(base), workflow(base, "gate2", "held2.toml")
        elsewhere = conductor_argv(srv, path2, base / "elsewhere", "--run", "t2")
        proc = start(srv, path, base / "state")
        try:
            events.until(shown(1))
            second = subprocess.run(elsewhere, capture_output=True, text=True, cwd=REPO_ROOT, timeout=TIMEOUT)
            proc.kill()  # the first dies holding round 1: its session stays running its run
            proc.wait(timeout=TIMEOUT)
        finally:
            proc.kill()
            unblock(base)
        assert second.returncode == 2, second
        assert second.stdout.startswith(f"refused: session conductor-held is running run {RUN} of this workflow"), second
        assert prompts(srv, ["a"]) == {"a": [f"{HEAD} 1 step ask]"]}, "the second conductor sent a prompt"
        assert other.read_file("conductor-held/status") == holding(1).encode()
        again = subprocess.run(elsewhere, capture_output=True, text=True, cwd=REPO_ROOT, timeout=TIMEOUT)
        assert again.returncode == 2 and "write stop, then restart, to conductor-held/ctl" in again.stdout, again
        other.write_file("conductor-held/ctl", b"stop\n")
        other.write_file("conductor-held/ctl", b"restart\n")
        taken = start(srv, path2, base / "elsewhere", "--run", "t2")
        status, out, err = released(taken, events, base, "t2", "gate2")
        assert status == 0 and out.startswith("done:"), f"{out}{err}"
        assert prompts(srv, ["a"])["a"][1:] == ["[conductor held run t2 round 1 step ask]",
                                                 "[conductor held run t2 round 2 step ask]"]


def test_a_new_run_over_an_unfinished_one_of_the_same_record_takes_its_session() -> None:
    """--again over a record whose conductor died (another version of the file): the session still runs
    the old run, which this record replaced and whose lock it holds, so it is not another conductor's."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        events, path, state = Events(srv), workflow(base), base / "state"
        proc = start(srv, path, state)
        try:
            events.until(shown(1))
        finally:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
            unblock(base)
        os.mkfifo(base / "gate2")  # another version of the file, whose gate reads a fifo of its own
        path.write_text(path.read_text().replace(str(base / "gate"), str(base / "gate2")))
        status, out, err = released(start(srv, path, state, "--again", "--run", "t3"), events, base, "t3", "gate2")
        assert status == 0 and out.startswith("done:"), f"{out}{err}"


def test_a_run_id_is_one_word_of_at_most_64_characters() -> None:
    """It is a word of the status detail that the fence reads back: `nightly 42` would read as `nightly`,
    and the conductor would refuse its own run after a restart."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    path = base / "failing.toml"
    path.write_text('name = "failing"\n[[steps]]\nid = "gate"\nkind = "gate"\nrun = ["false"]\n')
    for bad in ("nightly 42", "x" * 65, "-x", "a=b"):
        argv = [sys.executable, "-m", "conductor", "run", "-a", f"unix!{base / 'none'}", "--state", str(base / "s"),
                f"--run={bad}", str(path)]  # refused before it connects
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, timeout=TIMEOUT)
        assert done.returncode == 2 and "a run id is 1-64 letters, digits, - and _" in done.stderr, done


def test_a_finished_record_run_again_leaves_alone_the_run_that_took_its_session_over() -> None:
    """Killed between its end's record and its report, a run is reported by its next `run` alone; if
    another conductor took the session over meanwhile, that report must not end the other's turn."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as other:
        events, path, state = Events(srv), workflow(base), base / "state"
        counting = start(srv, path, base / "count", env={"ANVILFS_CONDUCTOR_CRASH_AT": "1000000"})  # never dies
        status, _, err = released(counting, events, base)
        end = next(int(n) for n, what in re.findall(r"crash point (\d+) \((.*?)\)", err) if what.startswith("record: end"))
        other.write_file("conductor-held/ctl", b"stop\n")
        other.write_file("conductor-held/ctl", b"restart\n")
        first = start(srv, path, state, env={"ANVILFS_CONDUCTOR_CRASH_AT": str(end)})
        assert released(first, events, base)[0] == -9  # killed with its end recorded, not reported: its turn still runs
        assert other.read_file("conductor-held/status") == holding(2).encode()
        other.write_file("conductor-held/ctl", b"stop\n")
        other.write_file("conductor-held/ctl", b"restart\n")
        taken = start(srv, workflow(base, "gate2", "held2.toml"), base / "elsewhere", "--run", "t2")
        try:
            events.until(shown(1, "t2"))
            again = subprocess.run(conductor_argv(srv, path, state), capture_output=True, text=True, cwd=REPO_ROOT,
                                   timeout=TIMEOUT)
            assert again.returncode == 0 and "runs run t2 now (taken over)" in again.stderr, again
            assert other.read_file("conductor-held/status").startswith(b"running workflow=held run=t2 ")
            for round_ in (1, 2):
                if round_ == 2:
                    events.until(shown(2, "t2"))
                release(base / "gate2")
            status, out, err = ended(taken, base)
        finally:
            taken.kill()
        assert status == 0 and out.startswith("done:"), f"{out}{err}"
