"""What `run` prints: stdout is the one final line, a finished run run again says it ended before, and a
server that is away is said once, then now and then, not at every attempt.

A real server (or none yet), the conductor as a process, sessions on the built-in `sim` backend.
"""

from __future__ import annotations

import re
import tempfile
import types
from pathlib import Path

from harness.server import start_server
from review_cycle import conductor_argv, review_server, run_conductor
from sim_flow import Watched, prompted

GATE = '''[[steps]]
id = "tests"
kind = "gate"
run = ["sh", "-c", "echo gate says on stdout; echo gate says on stderr >&2; {exit}"]
'''
HINT_FAILED = " (this run failed; `--again` starts a new one)\n"
HINT_DONE = " (this run is done; `--again` starts a new one)\n"
HINT_FIRST = " (the run is over: `run` again only repeats this; `--again` starts a new one)\n"


def test_stdout_is_the_final_line_alone_and_a_gates_output_goes_to_stderr() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        done = run_conductor(srv, prompted(base, {"a": "sim"}, steps=GATE.format(exit="true")), base / "s")
        assert (done.returncode, done.stdout) == (0, "done: all steps of one done\n"), done
        assert "gate says on stdout\n" in done.stderr and "gate says on stderr\n" in done.stderr, done.stderr


def test_a_finished_run_run_again_says_it_ended_before_until_again_starts_a_new_one() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    failing = prompted(base, {"a": "sim"}, name="failing", steps=GATE.format(exit="exit 3"))
    passing = prompted(base, {"b": "sim"}, name="passing")
    with review_server(base) as srv:
        first = run_conductor(srv, failing, base / "s")
        line = "failed: tests: gate chose fail"
        assert (first.returncode, first.stdout) == (1, line + HINT_FIRST), first  # --again said at once
        again = run_conductor(srv, failing, base / "s")
        assert (again.returncode, again.stdout) == (1, line + HINT_FAILED), again
        assert "gate says" not in again.stderr, "a finished run ran its gate again"
        new = run_conductor(srv, failing, base / "s", "--again", "--run", "t2")
        assert (new.returncode, new.stdout) == (1, line + HINT_FIRST), new
        assert "gate says on stdout" in new.stderr, "--again did not run the workflow again"
        assert run_conductor(srv, passing, base / "s").stdout == "done: all steps of passing done\n"
        repeated = run_conductor(srv, passing, base / "s")
        assert (repeated.returncode, repeated.stdout) == (0, "done: all steps of passing done" + HINT_DONE), repeated


def test_no_server_is_said_once_then_a_notice_now_and_then_not_a_line_per_attempt() -> None:
    """--retry-for 4: notices every second (a quarter of it; 30 s for the default 300), while it tries
    some eight times."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    address = f"unix!{base}/ns/agent"
    status, out, err = Watched(conductor_argv_for(base, "--retry-for", "4")).finish()
    assert status == 2 and out.startswith(f"refused: list the tree: the server stayed unavailable for 4s "
                                          f"(cannot connect to {address}"), (out, err)
    lines = err.splitlines()
    first = [line for line in lines if "trying again" in line]
    assert first == [f"conductor: list the tree: cannot connect to {address}: no such file or directory; is "
                     "`anvilfs serve` running?; trying again for up to 4 s (a notice every 1 s)"], err
    notices = [line for line in lines if line.startswith("conductor: still no server")]
    assert 1 <= len(notices) <= 3 and len(lines) == 1 + len(notices), err  # at most one a second, 4 s
    assert all(re.fullmatch(rf"conductor: still no server at {re.escape(address)} after [123] s; trying until 4 s",
                            line) for line in notices), err


def test_a_server_that_comes_later_is_said_once_when_away_and_once_when_back() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    proc = Watched(conductor_argv_for(base))
    try:
        proc.until("trying again for up to 30 s")
        srv = start_server(base)
        try:
            status, out, err = proc.finish()
        finally:
            srv.stop()
    finally:
        proc.kill()
    assert (status, out) == (0, "done: all steps of one done\n"), err
    assert err.count("trying again") == 1 and err.count("answers again, after") == 1, err
    assert f"conductor: the server at unix!{base}/ns/agent answers again, after " in err, err


def conductor_argv_for(base: Path, *extra: str) -> list[str]:
    """The conductor's command line (review_cycle's) for workflow `one` and a server that will be at BASE/ns."""
    later = types.SimpleNamespace(address=f"unix!{base}/ns/agent")
    return conductor_argv(later, prompted(base, {"a": "sim"}), base / "s", *extra)
