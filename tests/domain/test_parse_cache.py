"""A start takes what each bead's and convoy's TOML file parsed to from STATE/anvilfs.db while the file is
unchanged (anvilfs/storage/parsed.py, issue 32 item 6), and never believes a row over its file.

Real files in a private directory, a real Database with its writer thread; each "start" is a new
TomlObjects reading the same directory, as a restarted server's is. What counts as a parse is a call of
tomllib.loads, counted by wrapping it: the numbers do not come from the code under test.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
import tomllib

import pytest

from anvilfs.storage import Database, PrivateDir, TomlObjects, parsed
from anvilfs.storage.tomlwrite import dumps

BEADS = 20


@pytest.fixture
def state(tmp_path):
    state = PrivateDir(tmp_path / "state")
    beads = state.subdir("beads")
    for i in range(BEADS):
        beads.write_atomic(f"b{i:02d}.toml", bead(i, "pending").encode())
    yield state
    state.close()


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """Every tomllib.loads call from here on, by the text it was given."""
    calls: list[str] = []
    real = tomllib.loads

    def counted(text: str, **kw):
        calls.append(text)
        return real(text, **kw)

    monkeypatch.setattr(tomllib, "loads", counted)
    return calls


@pytest.fixture
def settled_at_once(monkeypatch):
    """Rows trusted on their stat as soon as they are made: a start right after the files were written would
    otherwise check every file's bytes (the racy rule, tested on its own below)."""
    monkeypatch.setattr(parsed, "RACY_NS", 0)


def bead(i: int, status: str, title: str = "") -> str:
    return dumps({"bead": {"id": f"b{i:02d}", "title": title or f"Task {i}", "role": "worker", "status": status}})


def start(state: PrivateDir) -> tuple[dict[str, dict], dict[str, str]]:
    """One server start's load of the beads: the tables and the broken files, its rows committed after."""
    db = Database(state, "anvilfs.db")
    try:
        return TomlObjects(state.subdir("beads"), "bead", db).load_all()
    finally:
        db.close()


def rows(state: PrivateDir) -> dict[str, str]:
    with sqlite3.connect(os.path.join(state.path, "anvilfs.db")) as conn:
        return dict(conn.execute(f"SELECT name, parsed FROM {parsed.TABLE} WHERE kind = 'bead'").fetchall())


def rewrite_keeping_size_and_mtime(state: PrivateDir, name: str, text: str) -> None:
    """A change a person (or `git checkout`) makes, its size the same and its mtime set back to the old."""
    path = os.path.join(state.subdir("beads").path, name)
    before = os.stat(path)
    assert len(text.encode()) == before.st_size, "the test's new text must have the old one's length"
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_start_on_an_unchanged_tree_parses_no_file(state, parses, settled_at_once):
    first, _ = start(state)
    assert len(parses) == BEADS
    parses.clear()
    again, broken = start(state)
    assert parses == [], f"{len(parses)} files parsed again, none changed"
    assert again == first and not broken


def test_a_start_right_after_the_files_were_written_checks_their_bytes_and_parses_none(state, parses):
    first, _ = start(state)  # every row racy: its file changed less than RACY_NS before it was made
    parses.clear()
    assert start(state)[0] == first
    assert parses == []


def written_by_the_server(state: PrivateDir, changes: dict[str, str]) -> None:
    """Each bead given a new status through TomlObjects.write, as a running server changes it; on disk after."""
    db = Database(state, "anvilfs.db")
    try:
        files = TomlObjects(state.subdir("beads"), "bead", db)
        files.load_all()
        for object_id, status in changes.items():
            number = int(object_id.removeprefix("b"))
            files.write(object_id, tomllib.loads(bead(number, status))["bead"], new=number >= BEADS)
        db.flush(timeout=30)
    finally:
        db.close()


def test_a_file_the_server_wrote_is_not_parsed_at_the_next_start(state, parses):
    """The writer makes a file's row in the job that puts it: a restart after the server changed its files
    compares their bytes with the rows, as it does a file written just before the last start, and parses
    none (it parsed every one the server had changed: 0.7 s of a 1.9 s restart with 11,000)."""
    start(state)
    changes = {"b01": "running", "b02": "completed", "b13": "failed", f"b{BEADS}": "pending"}  # the last one new
    written_by_the_server(state, changes)
    parses.clear()
    tables, broken = start(state)
    assert parses == [] and broken == {}
    assert {name: tables[name]["status"] for name in changes} == changes
    assert tables["b03"]["status"] == "pending"


def test_a_change_after_the_servers_write_that_the_stat_misses_is_parsed(state, parses, blind_stat):
    """The row made at the write is racy by its making: a person's change in the same tick of the clock
    (one the stat cannot see) is caught by the bytes, and parsed."""
    start(state)
    written_by_the_server(state, {"b04": "running"})
    rewrite_keeping_size_and_mtime(state, "b04.toml", bead(4, "failing"))  # "running" and "failing": 7 bytes
    parses.clear()
    assert start(state)[0]["b04"]["status"] == "failing"
    assert len(parses) == 1 and "failing" in parses[0]


def test_a_copy_of_the_state_is_checked_by_its_bytes_not_parsed(state, tmp_path, parses, settled_at_once):
    """Every file of a copy has another inode and other times than its row says: its bytes are still the
    row's, so no file is parsed (a restored or copied state dir parsed all 11,000 at its first start)."""
    first, _ = start(state)
    copy = PrivateDir(tmp_path / "copy")
    shutil.copytree(state.path, copy.path, dirs_exist_ok=True)
    rewrite_keeping_size_and_mtime(copy, "b08.toml", bead(8, "failed!"))  # and one changed in the copy
    parses.clear()
    try:
        tables, _ = start(copy)
    finally:
        copy.close()
    assert tables == first | {"b08": tables["b08"]} and tables["b08"]["status"] == "failed!"
    assert len(parses) == 1 and "failed!" in parses[0]


def test_a_persons_edit_after_the_writers_rename_is_parsed_however_long_the_job_takes(state, parses, monkeypatch):
    """The writer's row is made after the directory's fsync: a person's edit of the file between the rename and
    that moment must not be taken for the server's bytes. Here the job takes 10 s after the rename (a slow
    fsync, a starved thread: the clock is moved on, not waited for), the edit coming right after the rename.
    A row dated when it was made had the edit's stat and the server's value, and was trusted on its stat
    (found by a review: the start took `running` from the row while the file said `blocked`)."""
    start(state)
    path = os.path.join(state.subdir("beads").path, "b04.toml")
    real_sync, real_clock, ahead = PrivateDir.sync, time.time_ns, [0]

    def edited_then_slow(self):
        real_sync(self)
        if self.path == state.subdir("beads").path and not ahead[0]:
            with open(path, "rb") as f:  # a person's `sed -i` right after the server's rename
                text = f.read()
            with open(path, "wb") as f:
                f.write(text.replace(b'"running"', b'"blocked"'))
            ahead[0] = 10 * 10**9  # and the rest of the job takes 10 s

    monkeypatch.setattr(PrivateDir, "sync", edited_then_slow)
    monkeypatch.setattr(time, "time_ns", lambda: real_clock() + ahead[0])
    written_by_the_server(state, {"b04": "running"})
    assert ahead[0], "the edit was not made: the test did not test the window"
    parses.clear()
    assert start(state)[0]["b04"]["status"] == "blocked"
    assert len(parses) == 1 and "blocked" in parses[0]


def test_a_row_that_cannot_be_made_never_fails_the_write_unless_sqlite_rolled_it_all_back(state, tmp_path):
    """remember_written runs inside the writer's group transaction: no table yet is no row and no error, but
    a full disk that made SQLite roll back the whole group must fail it, not leave the job running unsaved."""
    beads = state.subdir("beads")
    conn = sqlite3.connect(str(tmp_path / "rows.db"), isolation_level=None)
    try:
        conn.execute("CREATE TABLE kv (k TEXT)")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO kv VALUES ('a change before the row, in the same group')")
        parsed.remember_written(conn, "bead", beads, "b01.toml", b"", lambda raw: {"id": "b01"}, 0)  # no table
        assert conn.in_transaction
        conn.execute("COMMIT")
        conn.execute(parsed._CREATE)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")  # the database may not grow: SQLITE_FULL
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO kv VALUES ('a change before the row, in the same group')")
        with pytest.raises(sqlite3.Error, match="full"):
            parsed.remember_written(conn, "bead", beads, "b01.toml", b"", lambda raw: {"big": "x" * 200_000}, 0)
        assert not conn.in_transaction
    finally:
        conn.close()


def test_a_file_rewritten_with_the_same_size_and_mtime_is_read_again(state, parses, settled_at_once):
    start(state)
    rewrite_keeping_size_and_mtime(state, "b07.toml", bead(7, "failed!"))  # "pending" and "failed!": 7 bytes
    parses.clear()
    tables, _ = start(state)
    assert tables["b07"]["status"] == "failed!"
    assert len(parses) == 1 and "failed!" in parses[0]
    parses.clear()
    assert start(state)[0]["b07"]["status"] == "failed!" and parses == []  # the new row is used from then on


@pytest.fixture
def blind_stat(monkeypatch):
    """A stat that misses every change after a file's first: what a change in the same tick of the
    filesystem's clock looks like, or one whose times a power cut lost."""
    first_ctime: dict[int, int] = {}

    def same_tick(info: os.stat_result) -> tuple:
        return (info.st_size, info.st_mtime_ns, first_ctime.setdefault(info.st_ino, info.st_ctime_ns), info.st_ino)

    monkeypatch.setattr(parsed, "_key", same_tick)


def test_a_change_the_stat_cannot_see_is_caught_by_the_racy_rule(state, parses, blind_stat):
    """Two writes in one tick of the filesystem's clock keep the ctime: a stat sees no change. A row made
    within RACY_NS of its file's last change is checked against the file's bytes at the next start."""
    start(state)
    rewrite_keeping_size_and_mtime(state, "b03.toml", bead(3, "failed!"))
    parses.clear()
    assert start(state)[0]["b03"]["status"] == "failed!"
    assert len(parses) == 1


def test_rows_made_before_the_machine_started_are_checked_against_the_bytes(state, parses, settled_at_once,
                                                                          blind_stat, monkeypatch):
    """A power cut can keep a file's new bytes and lose its new times (ext4 writes an overwritten block in
    place, the inode's times with the next journal commit): after a reboot no row is trusted on its stat."""
    start(state)
    rewrite_keeping_size_and_mtime(state, "b06.toml", bead(6, "failed!"))
    monkeypatch.setattr(parsed, "booted_ns", time.time_ns)  # the machine started after the rows were made
    parses.clear()
    assert start(state)[0]["b06"]["status"] == "failed!"
    assert len(parses) == 1


def test_a_deleted_file_disappears_and_so_does_its_row(state, settled_at_once):
    start(state)
    assert "b05.toml" in rows(state)
    state.subdir("beads").remove("b05.toml")
    tables, broken = start(state)
    assert "b05" not in tables and "b05" not in broken
    assert "b05.toml" not in rows(state)


def test_a_file_broken_by_hand_is_reported_not_taken_from_its_row(state, parses, settled_at_once):
    start(state)
    path = os.path.join(state.subdir("beads").path, "b02.toml")
    with open(path, "a") as f:
        f.write("this is not toml\n")
    tables, broken = start(state)
    assert "b02" not in tables and "b02" in broken
    assert "b02.toml" not in rows(state)


@pytest.mark.parametrize("corrupt", [
    "UPDATE {t} SET parsed = replace(parsed, 'Task 4', 'Forged') WHERE name = 'b04.toml'",  # valid JSON, wrong
    "UPDATE {t} SET parsed = '{{not json' WHERE name = 'b04.toml'",
    "UPDATE {t} SET size = 'big', digest = x'' WHERE name = 'b04.toml'",
    "UPDATE {t} SET seal = seal + 1 WHERE name = 'b04.toml'",
])
def test_a_corrupt_row_is_ignored_and_made_again(state, parses, settled_at_once, corrupt):
    first, _ = start(state)
    with sqlite3.connect(os.path.join(state.path, "anvilfs.db")) as conn:
        conn.execute("PRAGMA ignore_check_constraints = 1")
        conn.execute(corrupt.format(t=parsed.TABLE))
    parses.clear()
    tables, broken = start(state)
    assert tables == first and not broken
    assert len(parses) == 1 and "Task 4" in parses[0]
    parses.clear()
    assert start(state)[0] == first and parses == []  # made again: used at the next start


def test_a_table_of_an_older_layout_is_dropped_and_made_again(state, parses, settled_at_once):
    with sqlite3.connect(os.path.join(state.path, "anvilfs.db")) as conn:  # the same name, other columns
        conn.execute(f"CREATE TABLE {parsed.TABLE} (path TEXT PRIMARY KEY, mtime REAL, data BLOB)")
        conn.execute(f"INSERT INTO {parsed.TABLE} VALUES ('beads/b01.toml', 0, x'00')")
    first, broken = start(state)
    assert len(first) == BEADS and not broken and len(parses) == BEADS
    parses.clear()
    assert start(state)[0] == first and parses == []
    assert len(rows(state)) == BEADS


def test_a_file_of_another_mode_goes_through_the_checked_read(state, parses, settled_at_once):
    start(state)
    path = os.path.join(state.subdir("beads").path, "b09.toml")
    os.chmod(path, 0o644)  # as an older anvilfs wrote them: the read makes it 0600
    parses.clear()
    assert start(state)[0]["b09"]["title"] == "Task 9"
    assert len(parses) == 1 and os.stat(path).st_mode & 0o777 == 0o600


def test_a_file_nested_too_deeply_is_broken_not_fatal(state, tmp_path):
    """tomllib recurses per level of nesting: a bead file a person (or a script) wrote with arrays nested
    thousands deep raised RecursionError out of the load, and the server could not start."""
    state.subdir("beads").write_atomic("deep.toml", ("[bead]\nx = " + "[" * 5000 + "]" * 5000 + "\n").encode())
    db = Database(state, "anvilfs.db", "")
    try:
        found, broken = TomlObjects(state.subdir("beads"), "bead", db).load_all()
    finally:
        db.close()
    assert "nested too deeply" in broken["deep"]
    assert len(found) == BEADS
