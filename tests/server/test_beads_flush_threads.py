"""No flush from the event loop for a bead's or convoy's change (issue 33): a real server under strace
(harness.flush_trace). A client makes a convoy and five beads in it, claims and completes them; every
fsync or fdatasync the server makes meanwhile is the database's writer thread's (the beads' files and
their history messages) or git's, none the thread that runs trio's loop; and the beads' files are seen
flushed, so the trace's silence proves something. On 77a26cb (files written in the loop) it found 89.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harness.flush_trace import TRACE, FlushTrace, server_pid, start_traced, stop_traced

pytestmark = pytest.mark.needs("strace")


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvf."))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_bead_and_convoy_changes_flush_nothing_in_the_event_loop(base):
    srv = start_traced(base, trace=False)
    pid = server_pid(srv)

    def ok(*args: str) -> str:
        result = srv.run_cli(*args)
        assert result.returncode == 0, f"{args}: {result.stderr}"
        return result.stdout

    try:
        start = time.time()
        ok("write", "agent/convoys/ctl", 'new "Auth" "OAuth for all"')
        convoy = ok("read", "agent/convoys/list").split()[0]
        for i in range(5):
            ok("write", "agent/beads/ctl", f'new "Task {i}" worker "do {i}" convoy={convoy}')
        for bead in [line.split()[0] for line in ok("read", "agent/beads/list").splitlines()]:
            ok("write", f"agent/beads/{bead}/ctl", "claim w lease=3600")
            ok("write", f"agent/beads/{bead}/ctl", "complete")
        assert ok("read", f"agent/convoys/{convoy}/status") == "completed\n"
        end = time.time()
    finally:
        stop_traced(srv, pid)
    flushes = FlushTrace.read(base / TRACE, pid).between(start, end)
    FlushTrace.assert_none_in_loop(flushes)
    assert [f for f in flushes if f.where == "thread" and "/beads" in f.path], \
        "no flush of a bead's file seen: the trace proves nothing\n" + FlushTrace.summary(flushes)
