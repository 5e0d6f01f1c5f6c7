"""Beads saved through the database's writer thread (storage/objects.py, beads/collection.py): memory at
once, the files in the order the changes were made, and a change the disk refuses taken back in memory
once the writes queued after it are done. A real Database and real files; the writer is held to queue."""

from __future__ import annotations

import os
import threading
import tomllib

import pytest
import trio

from anvilfs.beads import Board, Status, Who
from anvilfs.domain_events import EventBus
from anvilfs.journal import Journal
from anvilfs.storage import Database, PrivateDir, TomlObjects
from harness.deadlines import within


@pytest.fixture
def parts(tmp_path):
    """(state, db, board): a board whose beads are written through a real database's writer thread."""
    state = PrivateDir(tmp_path / "state")
    db = Database(state, "anvilfs.db")
    yield state, db, Board(TomlObjects(state.subdir("beads"), "bead", db), EventBus(Journal()), is_session=lambda n: True)
    db.close()
    state.close()


def hold_writer(db: Database) -> threading.Event:
    """Keep the writer thread busy until the event is set: what is queued meanwhile waits behind it."""
    release = threading.Event()
    db.call(lambda conn: release.wait(30), barrier=True)
    return release


async def settled(db: Database) -> None:
    with within(30, "the writes queued to reach the disk"):
        await db.call(lambda conn: None, barrier=True).wait()


def on_disk(state: PrivateDir, bead_id: str) -> dict:
    return tomllib.loads((state.subdir("beads").read(f"{bead_id}.toml") or b"").decode())["bead"]


async def test_changes_are_in_memory_at_once_and_on_disk_in_their_order(parts):
    state, db, board = parts
    release = hold_writer(db)
    a = board.new("Research auth", "researcher", "r")
    board.claim(a.id, Who("bot1", "bot1"))
    board.complete(a.id, "/tmp/auth.md")
    assert board.get(a.id).status is Status.COMPLETED  # the next verb sees it before the disk does
    assert state.subdir("beads").read(f"{a.id}.toml") is None
    release.set()
    await settled(db)
    assert on_disk(state, a.id)["status"] == "completed" and on_disk(state, a.id)["result"] == "/tmp/auth.md"


async def test_a_comment_added_by_hand_survives_changes_queued_behind_one_another(parts):
    state, db, board = parts
    a = board.new("Research auth", "researcher", "r")
    await settled(db)
    path = os.path.join(state.path, "beads", f"{a.id}.toml")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write("# kept by a person\n" + text)
    release = hold_writer(db)
    for i in range(3):
        board.set_text(a.id, "description", f"version {i}")  # each edits what the one before it will leave
    release.set()
    await settled(db)
    with open(path) as f:
        text = f.read()
    assert text.startswith("# kept by a person\n") and 'description = "version 2"' in text


async def bead_whose_file_breaks(parts) -> tuple[str, str, threading.Event]:
    """A bead on disk, the writer held, and queued first: its file made a directory (no rename replaces it)."""
    state, db, board = parts
    bead = board.new("Research auth", "researcher", "r").id
    await settled(db)
    release = hold_writer(db)
    path = os.path.join(state.path, "beads", f"{bead}.toml")
    db.call(lambda conn: (os.unlink(path), os.mkdir(path)), barrier=True)
    return bead, path, release


async def test_a_change_the_disk_refuses_is_taken_back_in_memory_and_said(parts):
    state, db, board = parts
    a, _, release = await bead_whose_file_breaks(parts)
    version = board.changes.version
    board.claim(a, Who("bot1", "bot1"))
    board.complete(a)
    assert board.view.list_text().split()[:2] == [a, "completed"]
    release.set()
    await settled(db)
    assert board.get(a).status is Status.PENDING  # what its file held before the two
    assert board.view.list_text().split()[:2] == [a, "pending"]  # beads/list, kept a change at a time, too
    assert board.changes.version > version + 2  # the files drawn from all beads see it
    assert f"cannot save bead {a}: Is a directory; bead {a} is back to what its file holds" in board.bus.journal.text()


async def test_a_refused_change_that_a_later_one_wrote_over_is_not_taken_back(parts, monkeypatch):
    state, db, board = parts
    a, path, release = await bead_whose_file_breaks(parts)
    files = board._store.files
    taken, go_on = threading.Event(), threading.Event()
    prepare = files.dir.prepare

    def held_prepare(name, data, **kw):  # the claim's job, taken by the writer, waits here
        taken.set()
        assert go_on.wait(30), "the test never let the claim's job go on"
        return prepare(name, data, **kw)

    monkeypatch.setattr(files.dir, "prepare", held_prepare)
    board.claim(a, Who("bot1", "bot1"))
    release.set()
    assert await trio.to_thread.run_sync(taken.wait, 30), "the writer never took the claim's job"
    monkeypatch.setattr(files.dir, "prepare", prepare)
    db.call(lambda conn: os.rmdir(path), barrier=True)
    board.complete(a)  # a job of its own: the claim's is taken already
    go_on.set()
    await settled(db)
    assert board.get(a).status is Status.COMPLETED and on_disk(state, a)["status"] == "completed"
    assert "back to what its file holds" not in board.bus.journal.text()


async def test_changes_queued_while_the_writer_is_busy_share_one_job_and_one_commit(parts):
    state, db, board = parts
    release = hold_writer(db)
    before = db.commits
    made = [board.new(f"Task {i}", "worker", "d") for i in range(5)]
    board.claim(made[0].id, Who("bot1", "bot1"))
    release.set()
    await settled(db)
    assert db.commits - before == 3  # the held job's, the six writes' (one job), and settled()'s
    assert [on_disk(state, b.id)["status"] for b in made] == ["in_progress"] + ["pending"] * 4


async def test_a_new_bead_the_disk_refuses_is_gone_again(parts):
    state, db, board = parts
    release = hold_writer(db)
    db.call(lambda conn: os.rmdir(os.path.join(state.path, "beads")), barrier=True)  # no file can be made in it
    a = board.new("Research auth", "researcher", "r")
    assert board.find(a.id) is not None
    release.set()
    await settled(db)
    assert board.all() == []
    assert f"cannot save bead {a.id}: No such file or directory" in board.bus.journal.text()


async def test_changes_queued_to_a_file_nobody_edited_stay_with_the_fast_writer(parts, monkeypatch):
    state, db, board = parts
    """Each change is rendered against what the one queued before it will leave, not the file as it is now
    (which would look edited, and send every later change through tomlkit, many times slower)."""
    a = board.new("Research auth", "researcher", "r")
    await settled(db)

    def no_tomlkit(text):
        raise AssertionError("an untouched file was edited through tomlkit")

    monkeypatch.setattr("anvilfs.storage.objects.tomlkit.parse", no_tomlkit)
    release = hold_writer(db)
    for i in range(3):
        board.set_text(a.id, "description", f"version {i}")
    release.set()
    await settled(db)
    assert on_disk(state, a.id)["description"] == "version 2"
