"""A server SIGKILLed between a bead's save and its approval record: the next start makes the two agree.

The kill is the server's own, at the exact point (ANVILFS_TEST_KILL_AT, anvilfs/faults.py: test-only),
since no timing from outside hits the gap between two fsyncs reliably. Then a plain start on the same
state must leave no bead waiting without a request, and no request waiting for a bead decided already.
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from anvilfs.faults import ENV
from harness.server import AnvilServer, start_server

BEAD = "impl-oauth-001"


def ok(srv: AnvilServer, *args: str) -> str:
    result = srv.run_cli(*args)
    assert result.returncode == 0, f"anvilfs {' '.join(args)}: {result.stderr}"
    return result.stdout


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvc."))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def killed_at(base: Path, point: str, *steps: tuple[str, ...]) -> None:
    """A bead of dev's waiting for approval, then `steps`, the last of which must kill the server at `point`."""
    srv = start_server(base, trace=False, env={ENV: point})
    try:
        ok(srv, "write", "agent/ctl", "new sim /tmp name=dev")
        ok(srv, "write", "agent/beads/ctl", 'new "Implement OAuth" developer "Add OAuth" requires_approval=true')
        ok(srv, "write", f"agent/beads/{BEAD}/ctl", "claim dev")
        for step in steps[:-1]:
            ok(srv, *step)
        last = srv.run_cli(*steps[-1])
        assert last.returncode != 0, f"anvilfs {' '.join(steps[-1])} was answered: the server was not killed at {point}"
        assert srv.proc.wait(timeout=30) == -signal.SIGKILL, srv.trace()
    finally:
        srv.stop(sig=signal.SIGKILL)


def answers_to_dev(srv: AnvilServer) -> list[str]:
    with srv.connect() as client:
        return [json.loads(client.read_file(f"dev/inbox/{s.name}"))["subject"] for s in client.list_dir("dev/inbox")]


def test_killed_after_complete_the_bead_gets_its_request_at_the_next_start(base):
    killed_at(base, "approval-request", ("write", f"agent/beads/{BEAD}/ctl", "complete"))
    srv = start_server(base, trace=False)
    try:
        assert ok(srv, "read", f"agent/beads/{BEAD}/status") == "pending_approval\n"
        [line] = ok(srv, "read", "agent/human/approvals").splitlines()
        assert line.split()[1:3] == ["dev", BEAD], line
        assert f"bead {BEAD} waited for approval with no request" in ok(srv, "read", "agent/errors")
        ok(srv, "approve", BEAD)
        assert ok(srv, "read", f"agent/beads/{BEAD}/status") == "completed\n"
        assert answers_to_dev(srv) == ["approved"]
    finally:
        srv.stop()


# after a rejection the bead is dev's again, in_progress; a start that finds dev's agent gone releases it
@pytest.mark.parametrize(("step", "statuses", "answer"), [
    (("approve", BEAD), ["completed"], f"approved bead {BEAD}"),  # human's APPROVAL_RESPONSE (the CLI's mail route)
    (("write", f"agent/beads/{BEAD}/ctl", "reject no tests"), ["in_progress", "pending"], f"rejected bead {BEAD}: no tests"),
], ids=["approve-by-mail", "reject-on-ctl"])
def test_killed_after_the_decision_the_request_is_answered_at_the_next_start(base, step, statuses, answer):
    killed_at(base, "approval-answer", ("write", f"agent/beads/{BEAD}/ctl", "complete"), step)
    srv = start_server(base, trace=False)
    try:
        assert ok(srv, "read", f"agent/beads/{BEAD}/status").strip() in statuses
        assert ok(srv, "read", "agent/human/approvals") == ""  # it no longer waits for ever
        assert f"waited for bead {BEAD}, which is" in ok(srv, "read", "agent/errors")
        assert answers_to_dev(srv) == [answer]
    finally:
        srv.stop()
