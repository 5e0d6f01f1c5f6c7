"""No flush from the server's event loop under a load of prompts, beads and mail (issue 33).

An fsync can take milliseconds; in the trio thread it holds up every
client. The server runs under `strace -f` (tests/harness/flush_trace.py),
and clients put a load through the tree: sessions of backend sim prompted
(their turns run and end), beads made, claimed and completed, mail sent
and acknowledged. Every fsync, fdatasync, sync_file_range, syncfs, msync
and sync made meanwhile must come from another thread (the database's
writer) or another process (git), none from the thread that runs the loop.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harness.flush_trace import TRACE, FlushTrace, server_pid, start_traced, stop_traced
from harness.tree_load import Load, inboxes, new_sessions

SESSIONS = ["s0", "s1", "s2", "s3"]
EACH = 30  # prompts, bead cycles, messages (and as many acknowledgements) per phase


def put_load(srv) -> None:
    """Two phases of EACH of everything, the second acknowledging the first's mail; then every turn ended."""
    new_sessions(srv, SESSIONS)
    Load(srv, SESSIONS, "a", limit=EACH).start().join()
    sent = [(who, msg["id"]) for who, msgs in inboxes(srv, ["human", *SESSIONS]).items() for msg in msgs]
    Load(srv, SESSIONS, "b", limit=EACH, acknowledge=sent).start().join()
    with srv.connect("load", timeout=30) as client:
        for name in SESSIONS:
            client.read_file(f"{name}/wait")  # once the session is not busy: its turns have ended


@pytest.mark.needs("strace")
@pytest.mark.timeout(300)
def test_no_flush_comes_from_the_event_loop_under_a_load_of_prompts_beads_and_mail():
    base = Path(tempfile.mkdtemp(prefix="anvt.", dir="/tmp"))
    try:
        srv = start_traced(base, trace=False)
        pid = server_pid(srv)
        try:
            start = time.time()
            put_load(srv)
            end = time.time()
        finally:
            stop_traced(srv, pid)
        trace = FlushTrace.read(base / TRACE, pid)
        assert len(trace.loop_tids) == 1, f"not one thread of {pid} waits in epoll_wait: {trace.loop_tids}"
        during = trace.between(start, end)
        print(f"flushes under the load (trio runs in thread {trace.loop_tids}, the server is {pid}):")
        print(FlushTrace.summary(during))
        assert any(f.where != "loop" for f in during), "no flush traced at all: is the trace working?"
        FlushTrace.assert_none_in_loop(during)
    finally:
        shutil.rmtree(base, ignore_errors=True)
