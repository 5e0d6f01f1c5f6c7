"""Bead writes survive SIGKILL: every answered one is on disk and in git history, and git fsck is clean.

A bead's change reaches the disk in two steps (its file, then its message in STATE/anvilfs.db:
anvilfs/storage/history.py); a kill between them, at the exact point, is the last test here.

A client streams bead changes (create, claim, complete) at a real server;
each is recorded as answered only once its Twrite's reply came. The server
gets SIGKILL at a random point, 20 times in a row, and starts again on the
same state: the answered changes must all be in the files (read back over
9P) and in `git log` (their messages), the repository must pass fsck, and
nothing may be left uncommitted.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from anvilfs.client import ServerError
from anvilfs.faults import ENV
from anvilfs.ninep import consts as c
from anvilfs.storage.history import RECOVERED
from harness.bead_churn import killed_while_changing
from harness.server import start_server

ROUNDS = 20


def git(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
        "GIT_DIR": str(state / ".git"), "GIT_WORK_TREE": str(state), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.timeout(900)
def test_answered_bead_writes_survive_sigkill_on_disk_and_in_history():
    base = Path(tempfile.mkdtemp(prefix="anvk.", dir="/tmp"))
    state, rng, total, srv = base / "state", random.Random(99), 0, None
    try:
        srv = start_server(base, trace=False)
        for round_no in range(ROUNDS):
            wanted = rng.randint(1, 60)
            answered = killed_while_changing(srv, round_no, wanted, rng.uniform(0, 0.03))
            srv = start_server(base, trace=False, log_name=f"server{round_no}.trace")  # commits what was pending
            last = {}
            for bead, status, _ in answered:
                last[bead] = status
            with srv.connect("writer", timeout=20) as client:
                for bead, status in last.items():
                    got = client.read_file(f"beads/{bead}/status").decode().strip()
                    order = ["pending", "in_progress", "completed"]
                    assert order.index(got) >= order.index(status), f"round {round_no}: {bead} is {got}, answered {status}"
            messages = git(state, "log", "--format=%B").stdout
            missing = [m for _, _, m in answered if m not in messages]
            assert not missing, f"round {round_no}: not in history: {missing[:5]}"
            assert git(state, "status", "--porcelain", "--", "beads", "convoys").stdout == "", "changes left uncommitted"
            fsck = git(state, "fsck", "--strict", "--no-dangling")
            assert fsck.returncode == 0, fsck.stdout + fsck.stderr
            total += len(answered)
        print(f"{total} answered bead changes over {ROUNDS} SIGKILLs: all on disk and in history")
    finally:
        if srv is not None:
            srv.stop()  # a failed round must not leave its server running
        shutil.rmtree(base, ignore_errors=True)


def test_killed_between_a_beads_file_and_its_message_the_next_start_commits_the_file_as_recovered():
    base = Path(tempfile.mkdtemp(prefix="anvk.", dir="/tmp"))
    state, srv = base / "state", None
    try:
        srv = start_server(base, trace=False, env={ENV: "history-message"})
        with pytest.raises((OSError, ServerError, ConnectionError)):
            with srv.connect("writer", timeout=20) as client:
                ctl = client.open("beads/ctl", c.ORDWR)
                client.write_chunk(ctl, 0, b'new "Killed midway" worker "d"\n')  # never answered
        assert srv.proc.wait(timeout=30) == -signal.SIGKILL
        srv = start_server(base, trace=False, log_name="restart.trace")
        with srv.connect("writer", timeout=20) as client:
            [line] = client.read_file("beads/list").decode().splitlines()  # its file was on disk: it stands
        bead, status, *_ = line.split()
        assert status == "pending" and line.endswith("Killed midway"), line
        assert git(state, "log", "--format=%s").stdout.splitlines() == [RECOVERED]
        assert f"A\tbeads/{bead}.toml" in git(state, "log", "-1", "--format=%b").stdout
        assert git(state, "status", "--porcelain", "--", "beads", "convoys").stdout == ""
    finally:
        if srv is not None:
            srv.stop()
        shutil.rmtree(base, ignore_errors=True)
