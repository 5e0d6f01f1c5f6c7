"""Sessions flush nothing in the event loop: every fsync of theirs is the database writer's, in its thread.

A real `anvilfs serve` under strace -f (harness/flush_trace.py): sessions
made, prompted in bursts by several clients, their turns run, stopped,
restarted, killed and removed. In that window no flush may come from the thread
that runs trio's loop (a flush there holds up every client for a device's
latency), and the database's flushes come from another thread of the
server.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness.flush_trace import TRACE, FlushTrace, server_pid, start_traced, stop_traced

pytestmark = pytest.mark.needs("strace")

SESSIONS = [f"f{i}" for i in range(12)]


def prompt_all(srv, names: list[str], rounds: int) -> None:
    with srv.connect("flushes", timeout=30) as client:
        for round_no in range(rounds):
            for name in names:
                client.write_file(f"{name}/in", f"round {round_no} for {name}\n".encode())
            for name in names:
                client.read_file(f"{name}/wait")  # blocks while its turns run; the socket's timeout bounds it


def test_sessions_flush_only_in_the_database_writer_thread():
    base = Path(tempfile.mkdtemp(prefix="anvf.", dir="/tmp"))
    srv = start_traced(base, trace=False)
    try:
        pid = server_pid(srv)
        with srv.connect("flushes", timeout=30) as client:
            # answered once the App has started (its socket is there before: the history's first commit
            # at start, the history's own flushes, may come after it)
            client.read_file("list")
            began = time.time()
            for name in SESSIONS:
                client.write_file("ctl", f"new sim /tmp name={name}\n".encode())
        clients = [threading.Thread(target=prompt_all, args=(srv, SESSIONS[k::3], 4)) for k in range(3)]
        for t in clients:
            t.start()
        for t in clients:
            t.join(timeout=120)
            assert not t.is_alive(), "a client's prompts did not end in 120 s"
        with srv.connect("flushes", timeout=30) as client:
            for name in SESSIONS[:4]:
                client.write_file(f"{name}/ctl", b"stop\n")
                client.write_file(f"{name}/ctl", b"restart\n")
                client.read_file(f"{name}/wait")
                client.write_file(f"{name}/ctl", b"kill\n")
                client.write_file(f"{name}/ctl", b"remove\n")
            log = client.read_file(f"{SESSIONS[-1]}/log").decode()
        ended = time.time()
        assert "round 3 for" in log, log
        stop_traced(srv, pid)
        flushes = FlushTrace.read(base / TRACE, pid).between(began, ended)
        FlushTrace.assert_none_in_loop(flushes)
        database = [f for f in flushes if "anvilfs.db" in f.path]
        assert database and all(f.where == "thread" for f in database), FlushTrace.summary(flushes)
        print(FlushTrace.summary(flushes))
    finally:
        if srv.proc.poll() is None:
            srv.stop()
        shutil.rmtree(base, ignore_errors=True)
