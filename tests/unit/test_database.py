"""The database's writer thread: group commit, a failure kept to its own change, order, checked paths.

Real SQLite on a real disk, real threads; every wait has a deadline (the writer could hang).
"""

from __future__ import annotations

import os
import sqlite3
import threading

from pathlib import Path

import pytest
import trio

from anvilfs.storage import StorageError
from anvilfs.storage.database import Database
from anvilfs.storage.integrity import QuickCheck, damaged, damaged_text
from anvilfs.waitable import collecting
from harness.deadlines import within
from harness.stored import KV_SCHEMA, hold_writer

async def test_changes_queued_together_commit_as_one_transaction(db):
    release = hold_writer(db)
    before = db.commits
    commits = [db.execute("INSERT INTO kv VALUES (?, ?)", (str(n), "x")) for n in range(50)]
    release.set()
    with within(30, "the 50 inserts to commit"):
        for commit in commits:
            await commit.wait()
    assert db.commits - before == 2  # the held job's own, and one for all 50
    assert db.read("SELECT count(*) FROM kv") == [(50,)]


async def test_a_failing_change_fails_alone_and_the_rest_of_its_group_commits(db):
    release = hold_writer(db)
    first = db.execute("INSERT INTO kv VALUES ('a', '1')")
    duplicate = db.execute("INSERT INTO kv VALUES ('a', '2')")
    last = db.execute("INSERT INTO kv VALUES ('b', '3')")
    release.set()
    with within(30, "the group to commit"):
        await first.wait()
        await last.wait()
        with pytest.raises(OSError, match="UNIQUE constraint failed"):
            await duplicate.wait()
    assert db.read("SELECT k, v FROM kv ORDER BY k") == [("a", "1"), ("b", "3")]


async def test_a_commit_that_fails_fails_every_change_of_its_group_and_keeps_none(state):
    schema = ("PRAGMA foreign_keys=ON; CREATE TABLE IF NOT EXISTS parent (id TEXT PRIMARY KEY);"
              "CREATE TABLE IF NOT EXISTS child (id TEXT, parent TEXT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);")
    db = Database(state, "fk.db", schema)
    try:
        release = hold_writer(db)
        fine = db.execute("INSERT INTO parent VALUES ('p')")
        orphan = db.execute("INSERT INTO child VALUES ('c', 'nobody')")  # refused only at COMMIT
        release.set()
        with within(30, "the group to fail"):
            for commit in (fine, orphan):
                with pytest.raises(OSError, match="FOREIGN KEY"):
                    await commit.wait()
        assert db.read("SELECT count(*) FROM parent") == [(0,)]
        after = db.execute("INSERT INTO parent VALUES ('q')")  # the writer goes on
        with within(30, "the next change"):
            await after.wait()
    finally:
        db.close()


async def test_a_file_is_written_after_the_changes_before_it_and_before_those_after(db, state):
    seen = []
    db.execute("INSERT INTO kv VALUES ('before', '')")
    file = db.call(lambda conn: state.write_atomic("bead.toml", b"title = 'x'\n"), barrier=True)
    after = db.call(lambda conn: seen.append(os.path.exists(os.path.join(state.path, "bead.toml"))))
    with within(30, "the file and the change after it"):
        await file.wait()
        await after.wait()
    assert seen == [True]
    assert db.commits >= 2  # the insert was committed on its own, before the file


async def test_a_change_made_while_a_request_is_handled_is_what_its_answer_waits_for(db):
    with collecting() as saving:
        commit = db.execute("INSERT INTO kv VALUES ('k', 'v')")
    assert saving == [commit]
    outside = db.execute("INSERT INTO kv VALUES ('k2', 'v')")  # no request: nothing collects it
    with within(30, "the inserts"):
        await commit.wait()
        await outside.wait()


async def test_a_bug_in_a_change_fails_it_with_eio_and_the_writer_goes_on(db):
    broken = db.call(lambda conn: 1 / 0)
    fine = db.execute("INSERT INTO kv VALUES ('k', 'v')")
    with within(30, "both changes to settle"):
        with pytest.raises(OSError, match="ZeroDivisionError"):
            await broken.wait()
        await fine.wait()


def test_close_commits_what_is_queued_and_refuses_more(state):
    db = Database(state, "close.db", KV_SCHEMA)
    commits = [db.execute("INSERT INTO kv VALUES (?, '')", (str(n),)) for n in range(20)]
    db.close()
    for commit in commits:
        commit.wait_blocking(0)  # settled already: close waited for the writer
    with pytest.raises(StorageError, match="closed"):
        db.execute("INSERT INTO kv VALUES ('late', '')")
    again = Database(state, "close.db", KV_SCHEMA)
    assert again.read("SELECT count(*) FROM kv") == [(20,)]
    again.close()


def test_the_database_and_its_companions_are_private_files_never_links(state, tmp_path):
    db = Database(state, "mode.db", KV_SCHEMA)
    db.execute("INSERT INTO kv VALUES ('k', 'v')").wait_blocking(30)
    for suffix in ("", "-wal", "-shm"):
        assert os.stat(os.path.join(state.path, "mode.db" + suffix)).st_mode & 0o777 == 0o600
    db.close()
    target = tmp_path / "elsewhere"
    target.write_text("")
    os.symlink(target, os.path.join(state.path, "linked.db-wal"))
    with pytest.raises(StorageError, match="symbolic link"):
        Database(state, "linked.db", KV_SCHEMA)
    os.mkfifo(os.path.join(state.path, "fifo.db-shm"))  # must be refused, not block the open
    with pytest.raises(StorageError, match="not a regular file"):
        Database(state, "fifo.db", KV_SCHEMA)


async def test_settled_in_the_event_loop_with_then_callbacks_first(db):
    order = []
    commit = db.execute("INSERT INTO kv VALUES ('k', 'v')")
    commit.then(lambda error: order.append(("then", error, trio.lowlevel.current_task() is not None)))
    with within(30, "the insert"):
        await commit.wait()
    order.append("woke")
    assert order == [("then", None, True), "woke"]


def test_a_lock_is_no_damage_and_a_file_that_is_no_database_is(tmp_path):
    """`damaged` is for SQLite's corrupt and not-a-database codes only: a database another process holds is
    not damaged (a damaged page: tests/server/test_damaged_database.py)."""
    path = tmp_path / "x.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError) as refused:
            sqlite3.connect(path, timeout=0).execute("SELECT 1 FROM sqlite_master")
    finally:
        holder.close()
    assert str(refused.value) == "database is locked" and not damaged(refused.value)
    not_one = tmp_path / "not.db"
    not_one.write_bytes(b"this is no database, and it is longer than SQLite's header of a hundred bytes" * 4)
    with pytest.raises(sqlite3.DatabaseError) as refused:
        sqlite3.connect(not_one).execute("SELECT 1 FROM sqlite_master")
    assert damaged(refused.value)
    assert damaged_text(refused.value, "X").startswith('the database X is damaged (file is not a database); docs/using.md')
    assert QuickCheck(str(not_one)).run() == ["file is not a database"]


def test_a_quick_check_of_a_sound_file_under_any_name_finds_nothing(tmp_path):
    """The check opens its file by URI: "?", "#", "%", a space and bytes that are not UTF-8 are the file's."""
    odd = tmp_path / os.fsdecode(b"st ?#%20\xff")
    odd.mkdir()
    with sqlite3.connect(odd / "anvilfs.db") as conn:
        conn.execute("CREATE TABLE t (n)")
    conn.close()
    check = QuickCheck(str(odd / "anvilfs.db"))
    assert check.run() == [] and check.failed == "" and check.done.is_set()
    assert sorted(os.listdir(odd)) == ["anvilfs.db"]  # nothing made beside it: read-only, rollback-journal mode


def test_a_quick_check_that_cannot_run_is_no_damage(tmp_path):
    path = tmp_path / "x.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (n)")
    conn.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        check = QuickCheck(str(path))
        check.BUSY_SECONDS = 0.0
        assert check.run() is None and check.failed == "database is locked"
    finally:
        holder.close()
    stopped = QuickCheck(str(path))
    stopped.stop()
    assert stopped.done.is_set()  # at once: a run never begun holds nothing open (trio may never start its thread)
    assert stopped.run() is None and stopped.failed == "stopped"
    missing = QuickCheck(str(tmp_path / "none" / "x.db"))
    assert missing.run() is None and "unable to open" in missing.failed


def test_a_stop_while_the_check_reads_interrupts_its_connection(tmp_path):
    """stop() from another thread while the check's connection is open calls SQLite's interrupt on it: the
    one thing that ends the b-tree walk, a single step of SQLite's (QuickCheck.stop; that it ends the walk is
    SQLite's, measured in the commit that made it). Here the statement waits at its start until stop() has
    returned, so the interrupt comes, deterministically, while the connection is open."""
    path = tmp_path / "x.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (n)")
    conn.close()
    at_statement, stopped, interrupts, results = threading.Event(), threading.Event(), [], []

    class Interrupts(sqlite3.Connection):
        def execute(self, *args):
            at_statement.set()
            assert stopped.wait(30), "the test never stopped the check"
            return super().execute(*args)

        def interrupt(self) -> None:
            interrupts.append(threading.current_thread().name)
            super().interrupt()

    class Stopped(QuickCheck):
        def _open(self) -> sqlite3.Connection:
            return sqlite3.connect(f"{Path(self.path).as_uri()}?mode=ro", uri=True, check_same_thread=False,
                                   factory=Interrupts)

    check = Stopped(str(path))
    worker = threading.Thread(target=lambda: results.append(check.run()), name="checker")
    worker.start()
    assert at_statement.wait(30), "the check never came to its statement"
    check.stop()
    stopped.set()
    worker.join(30)
    assert not worker.is_alive() and results == [None] and check.failed == "stopped" and check.done.is_set()
    assert interrupts == ["MainThread"]  # from the stopping thread, on the check's open connection
