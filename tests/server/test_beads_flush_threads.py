"""No flush from the event loop for a bead's or convoy's change (issue 33): the server traced with strace.

The server's trio loop runs in its main thread (tid == pid); a bead's file and its history message are
flushed by the database's writer thread, and git (a child process) flushes its own. strace -f attached
to the running server records the thread of every fsync and fdatasync while a client makes beads and a
convoy change; none may be the main thread's, and some must be the writer's (else nothing was traced).
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time

import pytest

from harness.server import AnvilServer

FLUSH = re.compile(r"^(\d+)\s+.*\b(fsync|fdatasync)\(")


def traced(srv: AnvilServer, out) -> subprocess.Popen:
    strace = subprocess.Popen(["strace", "-f", "-p", str(srv.proc.pid), "-e", "trace=fsync,fdatasync", "-o", str(out)],
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    attached = ""
    while "attached" not in attached:  # strace says so on stderr once it traces every thread
        assert time.monotonic() < deadline, f"strace did not attach within 20 s: {attached}"
        line = strace.stderr.readline()
        assert line or strace.poll() is None, f"strace ended: {attached}"
        attached += line
    return strace


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_bead_and_convoy_changes_flush_nothing_in_the_event_loop(anvil_server: AnvilServer, tmp_path):
    srv = anvil_server
    out = tmp_path / "strace.out"
    strace = traced(srv, out)
    try:
        changes = 0

        def ok(*args: str) -> str:
            nonlocal changes
            result = srv.run_cli(*args)
            assert result.returncode == 0, f"{args}: {result.stderr}"
            changes += args[0] == "write"
            return result.stdout

        ok("write", "agent/convoys/ctl", 'new "Auth" "OAuth for all"')
        convoy = ok("read", "agent/convoys/list").split()[0]
        for i in range(5):
            ok("write", "agent/beads/ctl", f'new "Task {i}" worker "do {i}" convoy={convoy}')
        for bead in [line.split()[0] for line in ok("read", "agent/beads/list").splitlines()]:
            ok("write", f"agent/beads/{bead}/ctl", "claim w lease=3600")
            ok("write", f"agent/beads/{bead}/ctl", "complete")
        assert ok("read", f"agent/convoys/{convoy}/status") == "completed\n"
    finally:
        strace.send_signal(signal.SIGINT)
        strace.wait(timeout=20)
    flushes = [(int(m[1]), m[2]) for m in map(FLUSH.match, out.read_text().splitlines()) if m]
    in_loop = [f for f in flushes if f[0] == srv.proc.pid]
    assert not in_loop, f"{len(in_loop)} flushes from the event loop's thread: {in_loop[:5]}"
    assert len(flushes) >= 2 * changes, f"too few flushes traced to mean anything: {flushes}"
