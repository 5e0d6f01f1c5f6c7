"""The database's writer when SQLite itself refuses: every Commit of the group must still settle.

A full disk (SQLITE_FULL) rolls back the whole transaction, not only the statement; a lock held by
another process makes BEGIN fail once the busy timeout runs out. Either way a Commit never settled is a
request never answered. Real SQLite, a real second connection; every wait has a deadline.
"""

from __future__ import annotations

import sqlite3


from harness.deadlines import within
from harness.stored import hold_writer

async def _settles(commit) -> str:
    try:
        await commit.wait()
    except OSError as exc:
        return f"failed: {exc}"
    return "ok"


async def test_a_full_disk_in_one_change_settles_every_change_of_its_group(db):
    # the database may not grow: SQLite answers SQLITE_FULL as on a full disk, and rolls the transaction back
    pages = db.read("PRAGMA page_count")[0][0]
    with within(10, "the limit to be set"):
        await db.call(lambda conn: conn.execute(f"PRAGMA max_page_count={pages + 1}")).wait()
    release = hold_writer(db)
    small = db.execute("INSERT INTO kv VALUES ('a', 'x')")
    big = db.execute("INSERT INTO kv VALUES ('big', ?)", (b"x" * 200_000,))
    after = db.execute("INSERT INTO kv VALUES ('b', 'x')")
    release.set()
    with within(10, "every change of the group to settle (one hung: its request is never answered)"):
        outcomes = [await _settles(c) for c in (small, big, after)]
    assert "full" in outcomes[1]
    with within(10, "a later change"):
        await db.execute("INSERT INTO kv VALUES ('c', 'x')").wait()


async def test_a_lock_held_by_another_process_fails_the_changes_and_does_not_hang_them(db, state):
    with within(10, "the busy timeout to be set"):  # 30 s in anvilfs; shortened so that the test is quick
        await db.call(lambda conn: conn.execute("PRAGMA busy_timeout=200")).wait()
    other = sqlite3.connect(db.path, isolation_level=None)  # e.g. a person's sqlite3 shell, mid-transaction
    other.execute("BEGIN IMMEDIATE")
    try:
        commit = db.execute("INSERT INTO kv VALUES ('a', 'x')")
        with within(10, "the change to fail while another connection holds the write lock"):
            outcome = await _settles(commit)
        assert "locked" in outcome
    finally:
        other.execute("ROLLBACK")
        other.close()
    with within(10, "a change once the lock is released"):
        await db.execute("INSERT INTO kv VALUES ('b', 'x')").wait()


async def test_a_then_callback_that_raises_does_not_crash_the_event_loop_nor_strand_the_waiters(db):
    """_settle runs through run_sync_soon: an exception there is a TrioInternalError that ends the whole
    server, and the callbacks after it and the waiters never run. A bug in one callback must stay its own."""
    seen = []
    commit = db.execute("INSERT INTO kv VALUES ('k', 'v')")
    commit.then(lambda error: 1 / 0)
    commit.then(lambda error: seen.append(error))
    with within(10, "the insert, after a callback that raised"):
        await commit.wait()
    assert seen == [None]
