"""Review of the redo log (ef30a3b, 21fea3e): each test shows a way an answered write is lost, or an old or
removed state comes back. They fail against the code as reviewed."""

from __future__ import annotations

import errno
import os
import shutil
import threading

import pytest
import trio

from anvilfs.storage import PrivateDir, RedoLog, SaveQueue, StorageError
from anvilfs.storage import savequeue as savequeue_module
from anvilfs.storage.redolog import Op
from harness.full_disk import FullDisk
from test_redolog import _file, _queue


def _restart(root) -> tuple[PrivateDir, list[str]]:
    """A new process on the same state: its RedoLog replays what is left."""
    files = PrivateDir(root / "sessions")
    problems = RedoLog(PrivateDir(root / "redo"), {"sessions": files}).recover()
    return files, problems


# ---------------------------------------------------------------- 1. a refused write outlives its file's removal

def test_a_refused_write_of_a_removed_file_is_not_brought_back_by_the_next_checkpoint(tmp_path):
    """A session's .toml is refused in place (here a directory; ENOSPC/EIO do the same), so it sits in
    RedoLog._unapplied. The session is removed: its files move away and `gone` logs "g". But `gone` never
    clears _unapplied, so the next checkpoint (a clean stop's too) logs the old "p" again, AFTER the "g",
    in the segment that survives: the next start replays it and the removed session is back."""
    files, redo, q = _queue(tmp_path)
    (tmp_path / "sessions" / "a.toml").mkdir()
    q.replace(("a", "state"), _file(files, "a.toml", "the removed session"), stage=2)
    assert q.flush() == []  # logged, refused in place: answered
    # SessionSaver.remove: flush(mine), store.remove (a move), gone, discard
    history = PrivateDir(tmp_path / "removed")
    files.move("a.toml", history, "a.1.toml")
    q.gone(files, ["a.toml"])
    q.discard(("a", "state"))
    q.checkpoint()  # a clean stop
    redo.close()
    again, _ = _restart(tmp_path)
    assert not again.exists("a.toml"), "the removed session's .toml came back at the next start"


def test_a_refused_answer_of_a_removed_session_does_not_land_on_a_new_one_of_the_same_name(tmp_path):
    """Same root cause: old a.out refused, session removed, a new session "a" made (its .toml written,
    no `out` yet); the checkpoint carries the OLD session's out into the new segment, and a restart gives
    the new session the old one's answer."""
    files, redo, q = _queue(tmp_path)
    disk = FullDisk(files, lambda name: name == "a.out")
    q.replace(("old", "out"), _file(files, "a.out", "the OLD session's answer"), stage=1)
    q.replace(("old", "state"), _file(files, "a.toml", "old"), stage=2)
    q.flush()
    history = PrivateDir(tmp_path / "removed")
    for name in ("a.log", "a.out", "a.toml"):
        files.move(name, history, "1." + name)
    q.gone(files, ["a.log", "a.out", "a.toml"])
    q.discard(("old", "out"))
    q.discard(("old", "state"))
    disk.full = False  # the disk has room again
    q.replace(("new", "state"), _file(files, "a.toml", "new"), stage=2)  # a new session "a"
    assert q.flush() == []
    q.checkpoint()
    redo.close()
    again, _ = _restart(tmp_path)
    assert again.read("a.toml") == b"new"
    assert again.read("a.out") is None, "the new session got the removed one's answer"


# ---------------------------------------------------------------- 2. a checkpoint dropped by a stop's cancellation

async def test_a_stop_that_cancels_the_queue_at_a_due_checkpoint_leaves_no_older_segment_behind(tmp_path, monkeypatch):
    """Real clock (not MockClock, where _off_loop runs in the loop). The stop cancels the queue's task while
    its thread writes a batch; the batch returns (to_thread is not abandoned), the checkpoint is due,
    begin_checkpoint takes the era, and trio.to_thread.run_sync raises Cancelled at its first line
    (checkpoint_if_cancelled) before the thread starts: the era (its segments and touched files) is
    dropped. The clean stop's checkpoint then deletes only the NEW era's segments: the old one stays, and
    the next start replays it over newer files: an older state, with no crash at all."""
    monkeypatch.setattr(savequeue_module, "CHECKPOINT_SECONDS", 0.0)  # due at once (30 s of traffic in production)
    files, redo, q = _queue(tmp_path)
    real_log = redo.log

    entered, release = threading.Event(), threading.Event()

    def slow_log(ops):  # a busy disk: the record's write waits until the stop has come
        entered.set()
        assert release.wait(10), "the test never let the record go"
        real_log(ops)

    redo.log = slow_log
    async with trio.open_nursery() as nursery:
        nursery.start_soon(q.run)
        q.replace("t", _file(files, "a.toml", "v1"), stage=2)
        assert await trio.to_thread.run_sync(entered.wait, 10), "the queue's thread never wrote v1's record"
        q.replace("t", _file(files, "a.toml", "v2"), stage=2)  # a newer change, pending
        nursery.cancel_scope.cancel()  # the server stops, while the thread is in v1's record
        release.set()
    redo.log = real_log
    q.flush()  # SessionSaver.flush at a clean stop
    q.checkpoint()
    redo.close()
    assert files.read("a.toml") == b"v2"
    left = redo.dir.names(".redo")
    again, _ = _restart(tmp_path)
    assert (left, again.read("a.toml")) == ([], b"v2"), "a clean stop left a segment whose replay is older"


# ---------------------------------------------------------------- 3. a failed checkpoint fsync, then a successful one

def test_a_checkpoint_after_a_failed_fsync_does_not_trust_the_next_fsync(tmp_path):
    """fsyncgate: after a failed fsync Linux may drop the dirty pages and clear the error; the next
    fsync succeeds with the data never written. The retry only fsyncs again and then deletes the
    segments, the one place the write still was. (Emulated: the failing fsync leaves the file as the
    disk has it, empty.) PrivateDir.sync_tail already rewrites after a failure; the checkpoint should
    redo the era's writes from its segments (or keep them until a restart replays them)."""
    files, redo, q = _queue(tmp_path)
    q.replace("t", _file(files, "a.toml", "v1 answered"), stage=2)
    assert q.flush() == []
    real_sync = files.sync_file
    failed = []

    def sync_file(name):
        if not failed:
            failed.append(name)
            os.truncate(os.path.join(files.path, name), 0)  # the pages are gone; the disk has nothing
            raise OSError(errno.EIO, "Input/output error")
        real_sync(name)

    files.sync_file = sync_file
    q.checkpoint()  # refused: the segments are kept
    q.checkpoint()  # "succeeds"
    redo.close()
    assert files.read("a.toml") == b"v1 answered" or redo.dir.names(".redo"), \
        "the answered write is neither in its file nor in the log any more"


# ---------------------------------------------------------------- 4. a replay whose write fails deletes the record

def test_a_replay_that_cannot_do_a_write_keeps_its_segment_for_the_next_start(tmp_path):
    """recover() reports an op its file refuses ("left as it was") and then deletes the segment anyway:
    a transient ENOSPC/EIO at startup throws away an answered write (and with it the prompts whose prompt
    log segment was deleted once that record covered them)."""
    files, redo, q = _queue(tmp_path / "live")
    q.replace("t", _file(files, "a.toml", "prompts = 7"), stage=2)
    assert q.flush() == []
    redo.close()
    crashed = tmp_path / "cut"
    shutil.copytree(tmp_path / "live" / "redo", crashed / "redo")  # the power cut took a.toml
    lost = PrivateDir(crashed / "sessions")
    disk = FullDisk(lost)
    with pytest.raises(StorageError, match=r"cannot replay the redo log .* \(No space left on device\): the log is kept"):
        RedoLog(PrivateDir(crashed / "redo"), {"sessions": lost}).recover()  # the server does not start
    disk.full = False  # room again; the server is started once more
    again, _ = _restart(crashed)
    assert again.read("a.toml") == b"prompts = 7", "the first replay deleted the only copy of an answered write"


# ---------------------------------------------------------------- 5. the history of a removed session is never fsynced

def test_a_removed_sessions_files_are_durable_in_the_history(tmp_path, monkeypatch):
    """Before the redo log each file was fsynced when written, so removed/NAME.TIME.* was durable once
    the move's directories were. Now the content is written without fsync and the checkpoint fsyncs by
    name in sessions/ (gone: skipped) before deleting the record: SessionStore.remove must fsync each file
    before it moves it, or after a power cut the history files may be empty."""
    from anvilfs.sessions.store import SessionStore
    from test_session_store import _session
    from anvilfs.sessions.session import Definition

    store = SessionStore(PrivateDir(tmp_path / "state"))
    q = SaveQueue(redo=store.redo)
    session = _session(Definition(name="a", backend="sim", cwd="/tmp"))
    q.replace("t", lambda: store.state_file(session), stage=2)
    q.append("l", store.files, "a.log", b"its whole transcript\n", stage=0)
    assert q.flush() == []
    synced = set()
    for fn in ("fsync", "fdatasync"):
        real = getattr(os, fn)

        def call(fd, real=real):
            synced.add(os.fstat(fd).st_ino)
            return real(fd)

        monkeypatch.setattr(os, fn, call)
    where = store.remove(session)
    q.gone(store.files, store.file_names(session))
    q.checkpoint()
    monkeypatch.undo()
    assert store.redo.dir.names(".redo") == []
    history = os.path.dirname(where)
    for name in os.listdir(history):
        ino = os.stat(os.path.join(history, name)).st_ino
        assert ino in synced, f"removed/{name}: its content was never fsynced, and its record is deleted"


# ---------------------------------------------------------------- 6. segment names past six digits

def test_segments_past_999999_replay_in_the_order_they_were_written(tmp_path):
    """Names are f"{n:06d}.redo" and replayed in sorted (text) order: "1000000.redo" sorts before
    "999999.redo", so the older record is done last. (A segment per checkpoint and per refused record:
    about a year of 30 s checkpoints without a restart that finds none; the prompt log has the same.)"""
    files = PrivateDir(tmp_path / "sessions")
    redo_dir = PrivateDir(tmp_path / "redo")
    # the older record in 999999, the newer in 1000000, as a running server would write them
    first = RedoLog(redo_dir, {"sessions": files})
    first._numbers = iter([999999, 1000000])
    first.log([Op("p", files, "a.toml", b"older")])
    first._close()
    first.log([Op("p", files, "a.toml", b"newer")])
    first.close()
    assert sorted(redo_dir.names(".redo")) == ["1000000.redo", "999999.redo"]
    again, _ = _restart(tmp_path)
    assert again.read("a.toml") == b"newer", "replayed 1000000 before 999999"
