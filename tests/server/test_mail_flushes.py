"""Mail reaches the disk without a flush in the event loop: a real server under strace (harness.flush_trace).

Mail sent and acknowledged from clients at once (harness.tree_load), and approval requests answered:
every fsync or fdatasync the server makes meanwhile is made by another thread (the database's writer),
none by the thread that runs trio's loop; and there are flushes, so the trace's silence proves something.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from anvilfs.ninep import consts as c
from harness.flush_trace import TRACE, FlushTrace, server_pid, start_traced, stop_traced
from harness.tree_load import Load, inboxes, new_sessions

pytestmark = pytest.mark.needs("strace")
SESSIONS = ["s0", "s1"]


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvf."))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def approvals_answered(srv, count: int) -> None:
    with srv.connect("load", timeout=20) as client:
        for i in range(count):
            fid = client.open("s0/mail", c.ORDWR)
            client.write_all(fid, json.dumps({"to": "human", "type": "APPROVAL_REQUEST", "subject": f"r{i}",
                                              "body": ""}).encode())
            request = client.read_chunk(fid, 0).decode().strip()
            client.clunk(fid)
            fid = client.open("human/mail", c.ORDWR)
            client.write_all(fid, json.dumps({"to": "s0", "type": "APPROVAL_RESPONSE", "subject": "approved",
                                              "body": "", "re": request}).encode())
            assert client.read_chunk(fid, 0).decode().strip().isdigit()
            client.clunk(fid)


def test_mail_and_approvals_flush_only_outside_the_event_loop(base):
    srv = start_traced(base, trace=False)
    pid = server_pid(srv)
    try:
        new_sessions(srv, SESSIONS)
        start = time.time()
        Load(srv, SESSIONS, "m", limit=200, kinds=("mail",)).start().join()
        held = [(who, msg["id"]) for who, msgs in inboxes(srv, ["human", *SESSIONS]).items() for msg in msgs]
        Load(srv, SESSIONS, "a", limit=len(held), acknowledge=held, kinds=("acks",)).start().join()
        approvals_answered(srv, 20)
        end = time.time()
    finally:
        stop_traced(srv, pid)
    flushes = FlushTrace.read(base / TRACE, pid).between(start, end)
    FlushTrace.assert_none_in_loop(flushes)
    assert [f for f in flushes if "anvilfs.db" in f.path], "no flush of the database seen: the trace proves nothing"
