"""The save queue: coalesced, staged, written by a worker thread in groups, and never out of order."""

from __future__ import annotations

import errno
import os
import threading

import trio

from anvilfs.storage import PrivateDir, Replace, SaveQueue
from anvilfs.storage.writes import LAZY_SYNC


class RecordingDir(PrivateDir):
    """A real private directory that also records each disk step, and can be told to refuse appends."""

    def __init__(self, path):
        super().__init__(path)
        self.steps: list[str] = []
        self.threads: set[int] = set()
        self.refuse_appends = False
        self.refuse_syncs = False
        self.synced = threading.Event()

    def _note(self, step: str) -> None:
        self.steps.append(step)
        self.threads.add(threading.get_ident())

    def append(self, name, data, *, sync=True):
        if self.refuse_appends:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._note(f"append {name} {data.decode()}" + ("" if sync else " (lazy)"))
        return super().append(name, data, sync=sync)

    def sync_tail(self, name, start, data, *, rewrite=False):
        if self.refuse_syncs:
            raise OSError(errno.EIO, "Input/output error")
        self._note(f"sync-tail {name} from {start}" + " (rewritten)" * rewrite)
        super().sync_tail(name, start, data, rewrite=rewrite)

    def prepare(self, name, data):
        self._note(f"prepare {name} {data.decode()}")
        return super().prepare(name, data)

    def put(self, tmp, name):
        self._note(f"put {name}")
        super().put(tmp, name)

    def sync(self):
        self._note("sync")
        super().sync()
        self.synced.set()


def _file(d: PrivateDir, name: str, text: str):
    return lambda: Replace(d, name, text.encode())


def test_writes_coalesce_join_and_go_by_stage_with_one_directory_sync_per_stage(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    q.replace("state", _file(d, "a.toml", "v1"), stage=2)
    q.append("log", d, "a.log", b"a", stage=0)
    q.replace("state", _file(d, "a.toml", "v2"), stage=2)
    q.replace("out", _file(d, "a.out", "answer"), stage=1)
    q.replace("out2", _file(d, "b.out", "other"), stage=1)
    q.append("log", d, "a.log", b"b", stage=0)
    assert q.flush() == [] and len(q) == 0
    assert d.steps == ["append a.log ab",
                       "prepare a.out answer", "prepare b.out other", "put a.out", "put b.out", "sync",
                       "prepare a.toml v2", "put a.toml", "sync"]
    assert d.read("a.toml") == b"v2" and d.read("a.log") == b"ab"


def test_a_replace_is_rendered_when_it_is_written_not_when_it_is_queued(tmp_path):
    d = PrivateDir(tmp_path / "st")
    q, value = SaveQueue(), ["old"]
    q.replace("k", lambda: Replace(d, "k", value[0].encode()))
    value[0] = "new"
    q.flush()
    assert d.read("k") == b"new"


def test_a_refused_write_is_kept_in_order_and_holds_back_later_stages(tmp_path):
    d = RecordingDir(tmp_path / "st")
    errors = []
    q = SaveQueue(on_error=lambda key, exc: errors.append((key, exc.strerror)))
    d.refuse_appends = True
    q.append("log", d, "a.log", b"first ", stage=0)
    q.replace("state", _file(d, "a.toml", "state"), stage=2)
    assert sorted(q.flush()) == ["log", "state"]
    assert errors == [("log", "No space left on device")] and d.steps == []
    assert "log" in q and "state" in q  # nothing dropped; the .toml waits for its log
    q.append("log", d, "a.log", b"second", stage=0)
    d.refuse_appends = False
    assert q.flush() == []
    assert d.read("a.log") == b"first second" and d.read("a.toml") == b"state"


def test_flush_of_some_keys_leaves_the_others(tmp_path):
    d = PrivateDir(tmp_path / "st")
    q = SaveQueue()
    q.replace(("a", "state"), _file(d, "a", "a"))
    q.replace(("b", "state"), _file(d, "b", "b"))
    q.flush(lambda key: key[0] == "a")
    assert d.read("a") == b"a" and d.read("b") is None and ("b", "state") in q


async def test_the_task_writes_soon_after_a_change_in_a_worker_thread(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(q.run)
        q.replace("k", _file(d, "k", "1"))
        q.replace("k", _file(d, "k", "2"))
        assert await trio.to_thread.run_sync(d.synced.wait, 10), "the save queue wrote nothing within 10 s"
        nursery.cancel_scope.cancel()
    assert d.steps == ["prepare k 2", "put k", "sync"] and d.read("k") == b"2"
    assert threading.get_ident() not in d.threads  # the event loop's thread did no disk work


def test_a_flush_writes_what_the_thread_has_not_written_yet_first(tmp_path):
    # The moment between the loop handing a batch to the worker thread and the thread
    # taking the lock, made to last: a flush then (a request saving at once) must not let
    # the batch's older content land after its own newer one.
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    q.replace("state", _file(d, "a.toml", "older"), stage=2)
    q.append("log", d, "a.log", b"line", stage=0)
    batch = q._take(None)
    q._in_flight = [batch]  # what run() does before it starts the thread
    q.replace("state", _file(d, "a.toml", "newer"), stage=2)
    assert q.flush() == []
    assert d.steps == ["append a.log line", "prepare a.toml older", "put a.toml", "sync",
                       "prepare a.toml newer", "put a.toml", "sync"]
    q._write_locked([batch])  # the thread, late: nothing is left for it to write
    assert d.read("a.toml") == b"newer" and d.steps[-1] == "sync" and len(d.steps) == 7


def test_a_seal_puts_what_is_pending_as_it_is_now_before_what_comes_after(tmp_path):
    # a turn's start: its .toml (stage 2) must land before the turn's log lines (stage 0) that follow
    d = RecordingDir(tmp_path / "st")
    q, state = SaveQueue(), ["turn 1 running"]
    q.replace("state", lambda: Replace(d, "a.toml", state[0].encode()), stage=2)
    q.seal()
    state[0] = "turn 1 done"  # rendered at the seal: the sealed write keeps what was true then
    q.append("log", d, "a.log", b"prompt 1", stage=0)
    q.replace("state", lambda: Replace(d, "a.toml", state[0].encode()), stage=2)
    q.flush()
    assert d.steps == ["prepare a.toml turn 1 running", "put a.toml", "sync",
                       "append a.log prompt 1", "prepare a.toml turn 1 done", "put a.toml", "sync"]


def test_a_commit_is_done_once_its_writes_are_on_disk_and_says_so_first(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q, heard = SaveQueue(), []
    q.replace("a", _file(d, "a", "1"))
    commit = q.commit()
    commit.then(lambda error: heard.append((error, d.read("a"), commit.done.is_set())))
    assert not commit.done.is_set() and d.steps == []
    q.flush()
    assert heard == [(None, b"1", False)] and commit.done.is_set() and commit.error is None


def test_a_commit_with_nothing_new_waits_for_what_is_on_its_way(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    q.replace("a", _file(d, "a", "1"))
    q.seal()
    commit = q.commit()  # nothing pending: it is done when the sealed write is
    assert not commit.done.is_set()
    q.flush()
    assert commit.done.is_set() and commit.error is None and d.read("a") == b"1"


def test_a_refused_commit_fails_the_ones_after_it_and_loses_no_text(tmp_path):
    d = RecordingDir(tmp_path / "st")
    errors = []
    q = SaveQueue(on_error=lambda key, exc: errors.append(key))
    content = ["with the prompt"]
    q.append("log", d, "a.log", b"one ", stage=0)
    q.replace("state", lambda: Replace(d, "a.toml", content[0].encode()), stage=2)
    first = q.commit()
    q.seal()  # a turn began: what follows lands after
    q.append("log", d, "a.log", b"two ", stage=0)
    second = q.commit()
    q.seal()
    q.append("log", d, "a.log", b"three", stage=0)
    d.refuse_appends = True
    assert q.flush() == ["log", "state", "log"]
    assert first.error.strerror == "No space left on device" and errors == ["log"]
    assert "earlier write" in second.error.strerror  # held back behind the refusal, not tried
    content[0] = "without it"  # the refused prompt is dropped: the .toml is rendered again, not replayed
    d.refuse_appends = False
    assert q.flush() == []
    assert d.read("a.log") == b"one two three" and d.read("a.toml") == b"without it"


async def test_commits_that_come_together_share_one_batch_and_one_directory_sync(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(q.run)
        commits = []
        for name in ("a", "b", "c"):  # three prompts to three sessions in one received batch
            q.replace(name, _file(d, name, name), stage=2)
            commits.append(q.commit())
        with trio.fail_after(10):
            for commit in commits:
                await commit.wait()
        nursery.cancel_scope.cancel()
    assert d.steps == ["prepare a a", "prepare b b", "prepare c c", "put a", "put b", "put c", "sync"]
    assert threading.get_ident() not in d.threads


def test_a_lazy_append_waits_for_its_fsync_until_the_next_replace_is_renamed(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    q.append("log", d, "a.log", b"output", stage=0, lazy=True)
    q._write_locked([q._take(None)])  # the thread's batch: the transcript alone, no fsync of its own
    assert d.steps == ["append a.log output (lazy)"]
    q.append("log", d, "a.log", b" more", stage=0, lazy=True)
    q.replace("state", _file(d, "a.toml", "turn ended"), stage=2)
    q._write_locked([q._take(None)])
    assert d.steps[1:] == ["append a.log  more (lazy)", "prepare a.toml turn ended", "sync-tail a.log from 0",
                           "put a.toml", "sync"], "the .toml is renamed only once the transcript is on disk"
    q.append("log", d, "a.log", b" then", stage=0)  # a durable append covers the file's lazy ones
    q.replace("state", _file(d, "a.toml", "again"), stage=2)
    q._write_locked([q._take(None)])
    assert "sync-tail" not in " ".join(d.steps[6:]) and d.read("a.log") == b"output more then"


async def test_a_lazy_append_alone_is_fsynced_within_lazy_sync(autojump_clock, tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(q.run)
        q.append("log", d, "a.log", b"output", stage=0, lazy=True)
        await trio.sleep(LAZY_SYNC / 2)
        assert d.steps == ["append a.log output (lazy)"]
        await trio.sleep(LAZY_SYNC)
        assert d.steps == ["append a.log output (lazy)", "sync-tail a.log from 0"]
        nursery.cancel_scope.cancel()


def test_a_refused_fsync_of_lazy_appends_holds_the_replace_and_writes_them_again(tmp_path):
    d = RecordingDir(tmp_path / "st")
    errors = []
    q = SaveQueue(on_error=lambda key, exc: errors.append((key, exc.strerror)))
    q.append("log", d, "a.log", b"output", stage=0, lazy=True)
    q.replace("state", _file(d, "a.toml", "turn ended"), stage=2)
    d.refuse_syncs = True
    assert q.flush() == ["state", "log"]
    assert d.read("a.toml") is None and ("state", "Input/output error") in errors
    assert ("log", "Input/output error") in errors and "state" in q
    d.refuse_syncs = False
    assert q.flush() == []
    assert "sync-tail a.log from 0 (rewritten)" in d.steps, "after a failed fsync the text is written again"
    assert d.read("a.log") == b"output" and d.read("a.toml") == b"turn ended"


def test_a_flush_of_some_keys_makes_their_lazy_appends_durable_only(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    q.append(("a", "log"), d, "a.log", b"a", stage=0, lazy=True)
    q.append(("b", "log"), d, "b.log", b"b", stage=0, lazy=True)
    assert q.flush(lambda key: key[0] == "a") == []
    assert [s for s in d.steps if s.startswith("sync-tail")] == ["sync-tail a.log from 0"]


def test_sync_tail_rewrites_what_began_at_start(tmp_path):
    d = PrivateDir(tmp_path / "st")
    d.append("f", b"kept ")
    start = d.append("f", b"lazy", sync=False)
    with open(tmp_path / "st" / "f", "ab") as f:
        f.write(b" garbage")  # what a failed writeback may leave: the rewrite puts the tail back as it was
    d.sync_tail("f", start, b"lazy", rewrite=True)
    assert start == 5 and d.read("f") == b"kept lazy"
    d.sync_tail("gone", 0, b"x")  # a file moved away since: nothing to do


def test_commits_sealed_while_a_failing_batch_is_written_wait_for_what_it_kept(tmp_path):
    # A prompt-log segment is deleted once its covering commit is done: that commit must not be done
    # while a .toml of the batch before it (holding a prompt of the segment) is still refused.
    d = PrivateDir(tmp_path / "st")
    (tmp_path / "st" / "x.toml").mkdir()  # x's .toml cannot be renamed into place
    q = SaveQueue()
    q.replace("x", _file(d, "x.toml", "x with the prompt"), stage=2)
    q.seal()
    in_flight, q._sealed = q._sealed, []  # run(): batch 1 handed to the thread
    q._in_flight = in_flight
    q.replace("y", _file(d, "y.toml", "y"), stage=2)
    covered = q.commit()
    q.seal()  # another session's turn began meanwhile: sealed behind batch 1
    q._write_locked(in_flight)
    q._in_flight = []
    q._settle(in_flight)  # batch 1 failed: x is kept
    q.seal()
    batches, q._sealed = q._sealed, []  # run()'s next round
    q._write_locked(batches)
    q._settle(batches)
    assert "x" in q
    assert covered.done.is_set() and covered.error is not None, "done while x is nowhere on disk"
    (tmp_path / "st" / "x.toml").rmdir()
    assert q.flush() == [] and d.read("x.toml") == b"x with the prompt"


def test_a_forgotten_tail_is_not_written_into_a_new_file_of_the_same_name(tmp_path):
    d = RecordingDir(tmp_path / "st")
    q = SaveQueue()
    q.append(("old", "log"), d, "a.log", b"OLD-TAIL", stage=0, lazy=True)
    q._write_locked([q._take(None)])
    d.refuse_syncs = True
    q.flush(lambda key: key[0] == "old")  # refused: the tail is to be written again
    d.refuse_syncs = False
    os.rename(tmp_path / "st" / "a.log", tmp_path / "moved.log")  # the session's files went to the history
    q.forget_lazy(lambda key: key[0] == "old")
    q.append(("new", "log"), d, "a.log", b"new", stage=0, lazy=True)  # a new session of that name
    q._write_locked([q._take(None)])
    assert q.flush() == [] and d.read("a.log") == b"new"
