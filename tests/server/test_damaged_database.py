"""A damaged STATE/anvilfs.db is said in `errors` once the server is up (using.md, "A damaged database").

Real parts: `anvilfs serve` processes on a state directory whose database the test damages by hand while
no server runs (a page of a table anvilfs never reads, so the start goes as it would and only SQLite's
quick_check meets the damage), read over 9P. The sound case, said in `events` (a stream from the moment of
its open: nothing a test can wait on over 9P), is tests/domain/test_database_check.py's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.damage import damage_a_page, damage_root
from harness.prerequisites import require
from harness.server import REPO_ROOT, AnvilServer, start_server

DEADLINE = 30  # seconds: the check of a database this small takes milliseconds


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvd."))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def read(srv: AnvilServer, path: str) -> str:
    with srv.connect() as client:
        return client.read_file(path).decode()


def checked(srv: AnvilServer) -> None:
    """Once the server's log says its check of the database ended (nothing to wait on across processes)."""
    deadline = time.monotonic() + DEADLINE
    while "checked (SQLite's quick_check)" not in srv.trace():
        assert time.monotonic() < deadline, f"no check of the database logged within {DEADLINE} s:\n{srv.trace()}"
        time.sleep(0.05)  # poll interval, bounded by the deadline


def recovery_lines() -> str:
    """The shell lines of docs/using.md's "A damaged database", as a reader would copy them."""
    section = (REPO_ROOT / "docs" / "using.md").read_text().split("### A damaged database\n", 1)[1]
    block = [line for line in section.split("\n\n") if line.startswith("    ")][0]
    return "\n".join(line.removeprefix("    ") for line in block.splitlines())


def test_a_damaged_database_is_said_in_errors_and_the_server_goes_on(base):
    srv = start_server(base, trace=False)
    try:
        with srv.connect() as client:
            bead = client.read_back("beads/ctl", b'new "Kept in a file" worker "d"\n').decode().strip()
        assert srv.stop() == 0, srv.trace()
        damage_a_page(srv.state / "anvilfs.db")
        srv = start_server(base, trace=False, log_name="again.trace")  # a log of its own: checked() reads it
        checked(srv)
        errors = read(srv, "errors")
        assert "quick_check): damaged, see errors" in srv.trace(), srv.trace()
        assert "anvilfs.db is damaged: SQLite's quick_check says Page " in errors, errors
        assert 'docs/using.md, "A damaged database"' in errors, errors
        assert bead in read(srv, "beads/list")  # beads are files: the server goes on serving them
    finally:
        srv.stop()


def test_a_start_on_a_database_too_damaged_to_read_says_so_in_a_line(base):
    """Damage where the start reads (the sessions' table): no server, but a line that says why and where to
    read on, not a traceback."""
    srv = start_server(base, trace=False)
    with srv.connect() as client:
        client.read_back("ctl", b"new sim /tmp name=bot1\n")
    assert srv.stop() == 0, srv.trace()
    damage_root(srv.state / "anvilfs.db", "sessions")
    done = subprocess.run([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"), "--state",
                           str(srv.state)], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
                          env=os.environ | {"XDG_CONFIG_HOME": str(base / "xdg-config")})
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert (f"anvilfs: the database {srv.state / 'anvilfs.db'} is damaged (database disk image is malformed): the "
            'server cannot start on it; docs/using.md, "A damaged database"') in done.stderr, done.stderr


def test_the_recovery_that_using_md_gives_keeps_every_readable_row(base):
    sqlite3_cli = require("sqlite3")
    srv = start_server(base, trace=False)
    try:
        with srv.connect() as client:
            client.read_back("ctl", b"new sim /tmp name=bot1\n")
            client.write_file("bot1/in", b"hello\n")
            bead = client.read_back("beads/ctl", b'new "Kept in a file" worker "d"\n').decode().strip()
            client.read_file("bot1/wait")  # the turn's end: its transcript is in the database
            log = client.read_file("bot1/log").decode()
        assert srv.stop() == 0, srv.trace()
        damage_a_page(srv.state / "anvilfs.db")
        script = recovery_lines()
        assert script.startswith('cp -a "$STATE"') and "sqlite3" in script, script
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60,
                              env=os.environ | {"STATE": str(srv.state), "PATH": f"{Path(sqlite3_cli).parent}:/usr/bin:/bin"})
        assert done.returncode == 0 and done.stdout == "ok\n", done.stdout + done.stderr
        assert (base / "state.damaged" / "anvilfs.db").exists()  # everything as it was, aside
        srv = start_server(base, trace=False, log_name="recovered.trace")
        checked(srv)
        assert "quick_check): nothing wrong" in srv.trace() and "damaged" not in read(srv, "errors"), srv.trace()
        with srv.connect() as client:
            assert "bot1 sim await" in client.read_file("list").decode()
            assert "the first line was: hello" in log and client.read_file("bot1/log").decode() == log
            assert bead in client.read_file("beads/list").decode()
    finally:
        srv.stop()
