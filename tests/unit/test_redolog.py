"""The redo log: a batch is durable in one record; a replay after a power cut rebuilds what the files lost.

A power cut keeps what was fsynced and may lose the rest, in any mix: each
file written in place since the last checkpoint may be as any of its
versions since then, missing, or empty. The replay must turn every such mix
into the state the last answered batch left.
"""

from __future__ import annotations

import errno
import os
import random
import shutil

import pytest
import trio

from anvilfs.storage import PrivateDir, RedoLog, Replace, SaveQueue
from anvilfs.storage.redolog import CHECKPOINT_SECONDS, Op


def _queue(root):
    files = PrivateDir(root / "sessions")
    redo = RedoLog(PrivateDir(root / "redo"), {"sessions": files})
    return files, redo, SaveQueue(redo=redo)


def _file(d, name, text):
    return lambda: Replace(d, name, text.encode())


def _contents(d: PrivateDir) -> dict[str, bytes]:
    return {name: d.read(name) for name in d.names()}


class Syncs:
    """Counts the fsync and fdatasync calls made while it is installed."""

    def __init__(self, monkeypatch):
        self.count = 0
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, self._counted(real))

    def _counted(self, real):
        def call(fd):
            self.count += 1
            return real(fd)
        return call


def test_a_batch_of_many_files_costs_one_fdatasync_and_lands_in_place(tmp_path, monkeypatch):
    files, redo, q = _queue(tmp_path)
    q.flush()  # the first record opens the segment (a new directory entry: fsynced once)
    for i in range(5):
        q.replace(("s", i), _file(files, f"s{i}.toml", f"state {i}"), stage=2)
        q.append(("l", i), files, f"s{i}.log", f"line {i}\n".encode(), stage=0)
    q.append(("l", 9), files, "s9.log", b"x", stage=0)
    q.flush()  # opens the segment
    syncs = Syncs(monkeypatch)
    for i in range(5):
        q.replace(("s", i), _file(files, f"s{i}.toml", f"state {i} again"), stage=2)
        q.append(("l", i), files, f"s{i}.log", b"more\n", stage=0)
    assert q.flush() == []
    assert syncs.count == 1, "ten files, one record: one fdatasync, no fsync per file or directory"
    assert files.read("s3.toml") == b"state 3 again" and files.read("s3.log") == b"line 3\nmore\n"


def test_replay_rebuilds_every_file_from_nothing_and_twice_is_the_same(tmp_path):
    files, redo, q = _queue(tmp_path / "a")
    q.replace("t", _file(files, "a.toml", "v1"), stage=2)
    q.append("l", files, "a.log", b"one\n", stage=0)
    q.flush()
    q.replace("t", _file(files, "a.toml", "v2"), stage=2)
    q.append("l", files, "a.log", b"two\n", stage=0)
    q.replace("o", _file(files, "b.out", "gone soon"), stage=1)
    q.flush()
    files.remove("b.out")
    q.gone(files, ["b.out"])
    want = _contents(files)
    assert want == {"a.log": b"one\ntwo\n", "a.toml": b"v2"}
    shutil.copytree(tmp_path / "a" / "redo", tmp_path / "b" / "redo")
    for attempt in (1, 2):  # a crash in the middle of a replay: the next one does it all again
        copy = PrivateDir(tmp_path / "b" / "sessions")
        if attempt == 2:
            shutil.copytree(tmp_path / "a" / "redo", tmp_path / "b" / "redo", dirs_exist_ok=True)
        assert RedoLog(PrivateDir(tmp_path / "b" / "redo"), {"sessions": copy}).recover() == []
        assert _contents(copy) == want, f"replay {attempt}"
        assert PrivateDir(tmp_path / "b" / "redo").names() == [], "the segments replayed are deleted"


@pytest.mark.parametrize("seed", range(12))
def test_every_mix_a_power_cut_can_leave_replays_to_the_last_answered_state(tmp_path, seed):
    rng = random.Random(seed)
    files, redo, q = _queue(tmp_path / "live")
    versions: dict[str, list[bytes | None]] = {}  # each file's contents since the last checkpoint
    checkpointed: dict[str, bytes] = {}
    written: set[str] = set()  # the files written in place since then: not durable as they are
    for step in range(40):
        name = rng.choice(["a.toml", "b.toml", "a.log", "b.log", "a.out"])
        written.add(name)
        if name.endswith(".log"):
            q.append(name, files, name, f"{step}\n".encode(), stage=0, lazy=rng.random() < 0.3)
        elif rng.random() < 0.15 and files.exists(name):
            q.flush()
            files.remove(name)
            q.gone(files, [name])
        else:
            q.replace(name, _file(files, name, f"{name} at {step}"), stage=2 if name.endswith(".toml") else 1)
        if rng.random() < 0.6:
            q.flush()
        if rng.random() < 0.1:
            q.flush()
            q.checkpoint()
            checkpointed, versions, written = _contents(files), {}, set()
        for file in ("a.toml", "b.toml", "a.log", "b.log", "a.out"):
            versions.setdefault(file, [checkpointed.get(file)]).append(files.read(file))
    q.flush()
    q._unsynced.sync(None, redo)  # the lazy appends too: what a turn's end or a second later does
    want = _contents(files)
    for cut in range(5):
        crashed = tmp_path / f"cut{cut}"
        shutil.copytree(tmp_path / "live" / "redo", crashed / "redo")
        lost = PrivateDir(crashed / "sessions")
        for file, seen in versions.items():
            left = _after_a_power_cut(rng, file, seen) if file in written else seen[0]
            if left is not None:
                lost.write_atomic(file, left)
        problems = RedoLog(PrivateDir(crashed / "redo"), {"sessions": lost}).recover()
        assert problems == [] and _contents(lost) == want, f"seed {seed}, cut {cut}"


def _after_a_power_cut(rng, file: str, seen: list[bytes | None]) -> bytes | None:
    """What a file written in place since the checkpoint (its content then: seen[0]) may hold after a
    power cut. Appended to: what the checkpoint made durable and any part of what came after, perhaps
    with zeros past it (a size written back before the data). Replaced: any of its versions, or a new
    one with its data lost (empty); missing only if it was new."""
    durable, last = seen[0] or b"", seen[-1] or b""
    if file.endswith(".log"):
        kept = rng.randint(len(durable), max(len(durable), len(last)))
        return last[:kept] + b"\0" * rng.choice([0, 0, 7])
    return rng.choice(seen + [b""])


def test_a_torn_last_record_is_left_out_and_a_damaged_one_stops_the_replay(tmp_path):
    files, redo, q = _queue(tmp_path)
    for text in ("v1", "v2", "v3"):
        q.replace("t", _file(files, "a.toml", text), stage=2)
        q.flush()
    redo.close()
    segment = tmp_path / "redo" / "000001.redo"
    lines = segment.read_bytes().split(b"\n")
    segment.write_bytes(b"\n".join(lines[:2]) + b"\n" + lines[2][:20])  # the third record torn
    files.remove("a.toml")
    assert RedoLog(PrivateDir(tmp_path / "redo"), {"sessions": files}).recover() == []
    assert files.read("a.toml") == b"v2", "a torn record was never answered: left out"

    files2, redo2, q2 = _queue(tmp_path / "two")
    for text in ("v1", "v2", "v3"):
        q2.replace("t", _file(files2, "a.toml", text), stage=2)
        q2.flush()
    redo2.close()
    segment = tmp_path / "two" / "redo" / "000001.redo"
    lines = segment.read_bytes().split(b"\n")
    lines[1] = lines[1][:-3] + b"xyz"  # the second record damaged in place
    segment.write_bytes(b"\n".join(lines))
    files2.remove("a.toml")
    problems = RedoLog(PrivateDir(tmp_path / "two" / "redo"), {"sessions": files2}).recover()
    assert len(problems) == 1 and "line 2 is damaged" in problems[0]
    assert files2.read("a.toml") == b"v1", "nothing after a damaged record is replayed"
    assert sorted(os.listdir(tmp_path / "two" / "redo")) == ["000001.redo.damaged"]


def test_a_checkpoint_fsyncs_in_place_and_deletes_the_segments_and_a_refused_one_keeps_them(tmp_path):
    files, redo, q = _queue(tmp_path)
    q.replace("t", _file(files, "a.toml", "v1"), stage=2)
    q.flush()
    refuse = [True]
    real_sync = files.sync_file

    def sync_file(name):
        if refuse[0]:
            raise OSError(errno.EIO, "Input/output error")
        real_sync(name)

    files.sync_file = sync_file
    errors = []
    q.on_error = lambda key, exc: errors.append((key, exc.strerror))
    q.checkpoint()
    assert errors == [(("redo", "checkpoint"), "Input/output error")]
    assert redo.dir.names(".redo") == ["000001.redo"], "not durable in place: the record stays"
    q.replace("t", _file(files, "a.toml", "v2"), stage=2)
    q.flush()
    refuse[0] = False
    q.checkpoint()
    assert redo.dir.names(".redo") == [] and files.read("a.toml") == b"v2"


def test_a_write_the_file_refuses_is_durable_in_the_log_and_carried_by_each_checkpoint(tmp_path):
    files, redo, q = _queue(tmp_path)
    errors = []
    q.on_error = lambda key, exc: errors.append(key)
    (tmp_path / "sessions" / "a.toml").mkdir()  # a rename over a directory fails
    q.replace("t", _file(files, "a.toml", "v1"), stage=2)
    commit = q.commit()
    assert q.flush() == [], "in the redo log: written, and answered as such"
    assert commit.done.is_set() and commit.error is None
    assert errors == ["t"] and "t" in q, "reported, and tried again"
    q.discard("t")  # (not tried again here: the checkpoint alone must keep it)
    q.checkpoint()
    assert redo.dir.names(".redo") == ["000002.redo"], "the old segment went; the refused write is in the new one"
    (tmp_path / "sessions" / "a.toml").rmdir()
    copy = PrivateDir(tmp_path / "after" / "sessions")
    shutil.copytree(tmp_path / "redo", tmp_path / "after" / "redo")
    RedoLog(PrivateDir(tmp_path / "after" / "redo"), {"sessions": copy}).recover()
    assert copy.read("a.toml") == b"v1", "a replay still writes it"
    q.replace("t", _file(files, "a.toml", "v1"), stage=2)
    assert q.flush() == [] and files.read("a.toml") == b"v1"
    q.checkpoint()
    assert redo.dir.names(".redo") == [], "done in place at last: nothing left to carry"


def test_a_refused_record_fails_the_batch_and_loses_no_text(tmp_path):
    files, redo, q = _queue(tmp_path)
    real_log = redo.log
    redo.log = lambda ops: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device"))
    q.replace("t", _file(files, "a.toml", "v1"), stage=2)
    q.append("l", files, "a.log", b"line\n", stage=0)
    commit = q.commit()
    assert sorted(q.flush()) == ["l", "t"]
    assert commit.error is not None and files.read("a.toml") is None
    redo.log = real_log
    assert q.flush() == [] and files.read("a.log") == b"line\n" and files.read("a.toml") == b"v1"


def test_ops_name_their_directory_and_a_replay_ignores_an_unknown_one(tmp_path):
    files = PrivateDir(tmp_path / "sessions")
    redo = RedoLog(PrivateDir(tmp_path / "redo"), {"sessions": files})
    redo.log([Op("p", files, "a.toml", b"v1")])
    redo.close()
    other = PrivateDir(tmp_path / "elsewhere")
    problems = RedoLog(PrivateDir(tmp_path / "redo"), {"beads": other}).recover()
    assert len(problems) == 1 and "damaged" in problems[0] and other.names() == []


async def test_a_refused_write_is_tried_again_by_the_task_and_outlives_its_checkpoints(autojump_clock, tmp_path):
    files, redo, q = _queue(tmp_path)
    (tmp_path / "sessions" / "a.toml").mkdir()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(q.run)
        q.replace("t", _file(files, "a.toml", "v1"), stage=2)
        await trio.sleep(CHECKPOINT_SECONDS + 5)
        assert redo.dir.names(".redo") != [], "a logged write refused in place keeps a record"
        (tmp_path / "sessions" / "a.toml").rmdir()
        await trio.sleep(2)
        assert files.read("a.toml") == b"v1", "tried again within a second or so"
        await trio.sleep(CHECKPOINT_SECONDS + 2)
        assert redo.dir.names(".redo") == [], "then checkpointed, and the log deleted"
        nursery.cancel_scope.cancel()


class _Synced(PrivateDir):
    """Records what is fsynced in it: file names, and "." for the directory itself."""

    def __init__(self, path):
        super().__init__(path)
        self.synced: list[str] = []

    def sync_file(self, name):
        self.synced.append(name)
        super().sync_file(name)

    def sync(self):
        self.synced.append(".")
        super().sync()


def test_a_checkpoint_and_a_replay_fsync_every_file_written_and_then_their_directory(tmp_path):
    files = _Synced(tmp_path / "sessions")
    redo = RedoLog(PrivateDir(tmp_path / "redo"), {"sessions": files})
    q = SaveQueue(redo=redo)
    q.replace("t", _file(files, "a.toml", "v1"), stage=2)
    q.append("l", files, "a.log", b"line\n", stage=0)
    q.flush()
    files.synced.clear()
    q.checkpoint()
    assert sorted(files.synced[:2]) == ["a.log", "a.toml"] and files.synced[2:] == ["."], \
        "the files' data, then the renames and new entries"
    q.replace("t", _file(files, "a.toml", "v2"), stage=2)
    q.flush()
    redo.close()
    again = _Synced(tmp_path / "sessions")
    RedoLog(PrivateDir(tmp_path / "redo"), {"sessions": again}).recover()
    assert again.synced == ["a.toml", "."], "a replay makes what it wrote durable before it deletes the log"
