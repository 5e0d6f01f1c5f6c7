"""The save queue: coalesced, staged, written by a worker thread in groups, and never out of order."""

from __future__ import annotations

import errno
import threading

import trio

from anvilfs.storage import PrivateDir, Replace, SaveQueue


class RecordingDir(PrivateDir):
    """A real private directory that also records each disk step, and can be told to refuse appends."""

    def __init__(self, path):
        super().__init__(path)
        self.steps: list[str] = []
        self.threads: set[int] = set()
        self.refuse_appends = False
        self.synced = threading.Event()

    def _note(self, step: str) -> None:
        self.steps.append(step)
        self.threads.add(threading.get_ident())

    def append(self, name, data):
        if self.refuse_appends:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._note(f"append {name} {data.decode()}")
        super().append(name, data)

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
    batch = q._in_flight = q._take(None)  # what run() does before it starts the thread
    q.replace("state", _file(d, "a.toml", "newer"), stage=2)
    assert q.flush() == []
    assert d.steps == ["append a.log line", "prepare a.toml older", "put a.toml", "sync",
                       "prepare a.toml newer", "put a.toml", "sync"]
    q._write_locked(batch)  # the thread, late: nothing is left for it to write
    assert d.read("a.toml") == b"newer" and d.steps[-1] == "sync" and len(d.steps) == 7
