"""The parse cache never stops a server nor makes it wrong (issue 32, item 6): a server SIGKILLed in the
middle of writing it starts right the next time, and a table of another layout is made again.

The rows of STATE/anvilfs.db's parse cache (anvilfs/storage/parsed.py) are only a shortcut to what the
beads' files say: a start killed while it writes them (ANVILFS_TEST_KILL_AT=parse-cache: after the rows of
gone files are deleted, before the new ones are in, nothing of it committed) loses nothing, and the start
after it shows what the files hold, a change a stat hardly sees (same size, mtime set back) included.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from anvilfs.faults import ENV
from anvilfs.ninep import consts as c
from anvilfs.storage import parsed
from harness.bead_churn import killed_while_changing
from harness.server import AnvilServer, start_server


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvp."))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def beads_list(srv: AnvilServer) -> str:
    with srv.connect() as client:  # answered once the start has loaded the beads
        return client.read_file("beads/list").decode()


def stopped(srv: AnvilServer) -> None:
    assert srv.stop() == 0, srv.trace()


def test_a_start_killed_while_writing_the_cache_leaves_the_next_start_right(base):
    srv = start_server(base, trace=False)
    with srv.connect() as client:
        fid = client.open("beads/ctl", c.ORDWR)
        made = []
        for title in ("Alpha one", "Bravo one"):
            client.write_chunk(fid, 0, f'new "{title}" worker "w"\n'.encode())
            made.append(client.read_chunk(fid, 0).decode().strip())
        client.clunk(fid)
    stopped(srv)
    alpha, bravo = made
    # the first server made both files' rows as it wrote them (racy: their files had just changed); this
    # start compares the files' bytes with them, parses neither, and makes the rows again
    srv = start_server(base, trace=False, log_name="second.log")
    assert "Alpha one" in beads_list(srv)
    stopped(srv)
    assert "bead files: 0 taken from toml_parsed_v1, 2 after a look at their bytes, 0 parsed" in srv.trace(), \
        srv.trace()

    beads = base / "state" / "beads"
    path = beads / f"{alpha}.toml"
    before = os.stat(path)
    path.write_text(path.read_text().replace('"Alpha one"', '"Alpha two"'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    (beads / f"{bravo}.toml").unlink()

    # run to its end: it dies at the point, maybe before a client could see its socket
    killed = subprocess.run([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"),
                             "--state", str(base / "state")], capture_output=True, text=True, timeout=60,
                            env=os.environ | {"XDG_CONFIG_HOME": str(base / "xdg-config"), ENV: "parse-cache"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "bead files: 0 taken from toml_parsed_v1, 0 after a look at their bytes, 1 parsed" in killed.stderr, \
        killed.stderr  # the edited file, parsed: its row no longer fits it

    srv = start_server(base, trace=False, log_name="after.log")
    try:
        listing = beads_list(srv)
        with srv.connect() as client:
            errors = client.read_file("errors").decode()
    finally:
        stopped(srv)
    assert "Alpha two" in listing and "Alpha one" not in listing, listing
    assert bravo not in listing, listing
    assert "bead" not in errors, errors


def test_a_cache_table_of_another_layout_does_not_stop_the_server(base):
    srv = start_server(base, trace=False)
    with srv.connect() as client:
        client.write_file("beads/ctl", b'new "Charlie one" worker "w"\n')
    stopped(srv)
    with sqlite3.connect(base / "state" / "anvilfs.db") as conn:  # what an older anvilfs might have left
        conn.execute(f"DROP TABLE IF EXISTS {parsed.TABLE}")
        conn.execute(f"CREATE TABLE {parsed.TABLE} (path TEXT PRIMARY KEY, data BLOB)")
        conn.execute(f"INSERT INTO {parsed.TABLE} VALUES ('beads/x.toml', x'00')")
    for log in ("old-layout.log", "rebuilt.log"):
        srv = start_server(base, trace=False, log_name=log)
        try:
            assert "Charlie one" in beads_list(srv)
        finally:
            stopped(srv)
    assert "1 taken from" in srv.trace() or "1 after a look" in srv.trace(), srv.trace()  # made again, used


@pytest.mark.timeout(600)
def test_after_a_sigkill_at_any_point_every_bead_is_what_its_file_says(base):
    """The writer makes a file's row in the job that puts the file (parsed.remember_written): a server SIGKILLed at
    a random point while it changes beads starts with every bead as a parse of its file gives, while it takes the
    files the killed server wrote from their rows (checked by their bytes) rather than parse them."""
    rng, from_rows, srv = random.Random(32), 0, None
    try:
        srv = start_server(base, trace=False)
        for round_no in range(8):
            wanted = rng.randint(5, 40)
            killed_while_changing(srv, round_no, wanted, rng.uniform(0, 0.02))
            srv = start_server(base, trace=False, log_name=f"round{round_no}.log")
            with srv.connect() as client:  # answered once the start has loaded the beads
                names = [entry.name for entry in client.list_dir("beads") if entry.qid.type & c.QTDIR]
                shown = {name: client.read_file(f"beads/{name}/status").decode().strip() for name in names}
            loaded = re.search(r"bead files: (\d+) taken from \S+, (\d+) after a look at their bytes", srv.trace())
            assert loaded, srv.trace()
            from_rows += int(loaded.group(2))
            stopped(srv)  # what the start itself changed, if anything, is in the files after a clean stop
            files = {path.stem: tomllib.loads(path.read_text())["bead"]["status"]
                     for path in (base / "state" / "beads").glob("*.toml")}
            assert shown == files, f"round {round_no}: the server showed beads other than their files"
            srv = start_server(base, trace=False, log_name=f"round{round_no}-again.log")
    finally:
        if srv is not None:
            srv.stop()
    assert from_rows > 0, "no start took a bead from a row the writer made: the rows were not tested"
