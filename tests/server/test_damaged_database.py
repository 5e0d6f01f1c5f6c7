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

from harness.damage import damage_a_page, damage_root, damage_schema_page
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


def recovery_lines() -> tuple[str, str]:
    """The shell lines of docs/using.md's "A damaged database", as a reader would copy them: those that make
    the new file and show it, and those that put it in place."""
    section = (REPO_ROOT / "docs" / "using.md").read_text().split("### A damaged database\n", 1)[1]
    make, put = [block for block in section.split("\n\n") if block.startswith("    ")][:2]
    return tuple("\n".join(line.removeprefix("    ") for line in block.splitlines()) for block in (make, put))


@pytest.mark.parametrize("where", ["sessions", "schema"])
def test_a_start_on_a_database_too_damaged_to_read_says_so_and_using_md_brings_it_back(base, where):
    """Damage where the start reads (the sessions' table, or the first page: the schema): no server, but a
    line that says why and where to read on, not a traceback. Then using.md's lines: with the sessions'
    table damaged the server starts on the rest; with the schema's page damaged they stop, as the text says,
    before anything is replaced."""
    srv = start_server(base, trace=False)
    try:
        with srv.connect() as client:
            client.read_back("ctl", b"new sim /tmp name=bot1\n")
            bead = client.read_back("beads/ctl", b'new "Kept in a file" worker "d"\n').decode().strip()
    finally:
        assert srv.stop() == 0, srv.trace()
    db = srv.state / "anvilfs.db"
    damage_root(db, "sessions") if where == "sessions" else damage_schema_page(db)
    done = subprocess.run([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"), "--state",
                           str(srv.state)], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
                          env=os.environ | {"XDG_CONFIG_HOME": str(base / "xdg-config")})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (f"anvilfs: the database {db} is damaged (database disk image is malformed); docs/using.md, "
            '"A damaged database", says how to keep what can be read') in done.stderr, done.stderr
    before = db.read_bytes()
    shown = make_and_show(base, srv.state)
    if where == "schema":  # using.md: stop here; the damaged file stays, untouched
        assert shown.returncode != 0 and "no such table: sessions" in shown.stderr, shown.stdout + shown.stderr
        _, put = recovery_lines()
        careless = recover(base, srv.state, put)  # a reader who goes on anyway: the lines themselves refuse
        assert careless.returncode != 0 and "no such table: sessions" in careless.stderr, careless.stderr
        assert db.read_bytes() == before
        return
    assert shown.returncode == 0 and shown.stdout == "ok\n", shown.stdout + shown.stderr  # no session: their table's top
    put_in_place(base, srv.state)
    srv = start_server(base, trace=False, log_name="recovered.trace")
    try:
        checked(srv)
        assert "quick_check): nothing wrong" in srv.trace() and "database" not in read(srv, "errors"), srv.trace()
        assert read(srv, "list") == "" and bead in read(srv, "beads/list")  # beads are files
    finally:
        srv.stop()


def recover(base: Path, state: Path, lines: str) -> subprocess.CompletedProcess:
    """Lines of using.md's run as a reader would: bash, STATE set, the sqlite3 command on the PATH."""
    sqlite3_cli = require("sqlite3")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", lines], capture_output=True, text=True, timeout=60,
                          env=os.environ | {"STATE": str(state), "PATH": f"{Path(sqlite3_cli).parent}:/usr/bin:/bin"})


def make_and_show(base: Path, state: Path) -> subprocess.CompletedProcess:
    """using.md's first lines: the state saved aside (checked here), the new file made and shown."""
    make, _ = recovery_lines()
    assert make.startswith('saved=$(mktemp -d "$STATE.damaged-') and "sqlite3 -readonly" in make, make
    done = recover(base, state, make)
    saved = list(base.glob(f"{state.name}.damaged-*"))
    assert len(saved) == 1 and (saved[0] / "anvilfs.db").exists(), saved  # everything as it was, aside
    return done


def put_in_place(base: Path, state: Path) -> None:
    _, put = recovery_lines()
    assert put.startswith('sqlite3 "$STATE/recovered.db" "SELECT') and put.splitlines()[-1].strip().startswith("mv "), put
    done = recover(base, state, put)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_the_recovery_that_using_md_gives_keeps_every_readable_row(base):
    srv = start_server(base, trace=False)
    try:
        with srv.connect() as client:
            client.read_back("ctl", b"new sim /tmp name=bot1\n")
            client.write_file("bot1/in", b"hello\n")
            bead = client.read_back("beads/ctl", b'new "Kept in a file" worker "d"\n').decode().strip()
            client.read_file("bot1/wait")  # the turn's end: its transcript is in the database
            log = client.read_file("bot1/log").decode()
    finally:
        assert srv.stop() == 0, srv.trace()
    damage_a_page(srv.state / "anvilfs.db")
    shown = make_and_show(base, srv.state)
    assert shown.returncode == 0 and shown.stdout == "ok\nbot1\n", shown.stdout + shown.stderr
    put_in_place(base, srv.state)
    srv = start_server(base, trace=False, log_name="recovered.trace")
    try:
        checked(srv)
        assert "quick_check): nothing wrong" in srv.trace() and "damaged" not in read(srv, "errors"), srv.trace()
        with srv.connect() as client:
            assert "bot1 sim await" in client.read_file("list").decode()
            assert "the first line was: hello" in log and client.read_file("bot1/log").decode() == log
            assert bead in client.read_file("beads/list").decode()
    finally:
        srv.stop()
