"""The prompt log's storage: records on disk before their commit is done, group-committed, read back whole."""

from __future__ import annotations

import errno
import os
import threading

import pytest
import trio

from anvilfs.storage import AppendLog, Commit, PrivateDir
from anvilfs.storage.loglines import crc_line
from anvilfs.storage.private import LogFile


class CountingDir(PrivateDir):
    """A real private directory that counts the durable writes of the logs it opens."""

    def __init__(self, path):
        super().__init__(path)
        self.writes: list[bytes] = []

    def open_log(self, name):
        log = super().open_log(name)
        writes = self.writes

        class Counted(LogFile):
            def write_durably(self, data):
                writes.append(data)
                super().write_durably(data)

        log.__class__ = Counted
        return log


def _logged(d: PrivateDir, *records: bytes) -> None:
    """Records written by a server that then stopped (a clean stop's flush, in the loop)."""
    log = AppendLog(d)
    for record in records:
        log.add(record)
    log.flush()
    log.close()


async def _written(log: AppendLog, *commits: Commit) -> None:
    with trio.fail_after(10):
        for commit in commits:
            await commit.wait()


class HeldDir(CountingDir):
    """A CountingDir whose log's writes wait, in the log's thread, until the test lets each one go."""

    def __init__(self, path):
        super().__init__(path)
        self.entered, self.go, self.written = (threading.Semaphore(0) for _ in range(3))

    def open_log(self, name):
        log = super().open_log(name)
        write, held = log.write_durably, self

        def write_durably(data):
            held.entered.release()
            assert held.go.acquire(timeout=10), "the test never let the write go"
            write(data)
            held.written.release()

        log.write_durably = write_durably
        return log


async def _in_write(d: HeldDir) -> None:
    """Until the log's thread is inside a write (it waits there for d.go)."""
    assert await trio.to_thread.run_sync(d.entered.acquire, True, 10), "the log's thread began no write"


async def test_records_added_while_a_write_goes_on_share_the_next_one_and_come_back_in_order(tmp_path):
    d = HeldDir(tmp_path / "p")
    log = AppendLog(d)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.run)
        first = log.add(b"record 0")
        await _in_write(d)
        commits = [log.add(f"record {i}".encode()) for i in (1, 2, 3)]
        d.go.release()
        await _in_write(d)
        d.go.release()
        await _written(log, first, *commits)
        nursery.cancel_scope.cancel()
    log.close()
    assert d.writes == [crc_line(b"record 0"), b"".join(crc_line(f"record {i}".encode()) for i in (1, 2, 3))], \
        "the three records added during the first write are the second write, one fdatasync"
    records, problems = AppendLog(PrivateDir(tmp_path / "p")).records()
    assert records == [b"record 0", b"record 1", b"record 2", b"record 3"] and problems == []


async def test_a_segment_is_covered_only_once_every_record_in_it_is_settled(tmp_path):
    """The thread can write the next group, and close the segment with it, before the loop has settled the
    group before: the owner's cover, taken when the segment's deletion is decided, must come after every
    record in the segment was handed to the owner (a prompt joins its .toml once its commit is done)."""
    d = HeldDir(tmp_path / "p")
    commits: list[Commit] = []
    unsettled_at_cover: list[int] = []

    def covered() -> None:
        unsettled_at_cover.append(sum(not c.done.is_set() for c in commits))

    log = AppendLog(d, segment_bytes=30, covered=covered)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.run)
        commits.append(log.add(b"a" * 10))
        await _in_write(d)
        commits.append(log.add(b"b" * 10))  # the next group: it fills the segment
        d.go.release()
        d.go.release()
        # no await until both writes are done: the loop settles the first group only after the second
        for _ in range(2):
            assert d.written.acquire(timeout=10), "a write never ended"
        await _written(log, *commits)
        nursery.cancel_scope.cancel()
    log.close()
    assert unsettled_at_cover == [0], "the segment's cover came before all its records were settled"
    assert d.names(".wal") == []


def test_a_torn_last_line_is_left_out_quietly_and_a_damaged_one_is_reported(tmp_path):
    _logged(PrivateDir(tmp_path / "p"), b"good")
    with open(tmp_path / "p" / "000001.wal", "ab") as f:
        f.write(b"00000000 damaged\n")   # whole, but its CRC is wrong
        f.write(b"1c291ca3 to")          # a write the crash cut short: never answered
    records, problems = AppendLog(PrivateDir(tmp_path / "p")).records()
    assert records == [b"good"]
    assert len(problems) == 1 and "000001.wal: line 2 is damaged" in problems[0]


async def test_a_write_the_disk_refuses_fails_its_commits_and_leaves_nothing_behind(tmp_path, monkeypatch):
    d = PrivateDir(tmp_path / "p")
    log = AppendLog(d)
    real = os.fdatasync
    refuse = [True]

    def fdatasync(fd):
        if refuse[0]:
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.run)
        refused = log.add(b"refused")
        with pytest.raises(OSError, match="Input/output error"):
            await _written(log, refused)
        refuse[0] = False
        await _written(log, log.add(b"taken"))
        nursery.cancel_scope.cancel()
    log.close()
    assert AppendLog(PrivateDir(tmp_path / "p")).records() == ([b"taken"], []), "the refused record was cut off"


async def test_a_full_segment_is_deleted_once_what_it_holds_is_saved_elsewhere(tmp_path):
    d = PrivateDir(tmp_path / "p")
    covers: list[Commit] = []

    def covered() -> Commit:
        covers.append(Commit())
        return covers[-1]

    log = AppendLog(d, segment_bytes=100, covered=covered)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(log.run)
        await _written(log, log.add(b"x" * 120))  # fills the first segment at once
        assert d.names(".wal") == ["000001.wal"] and len(covers) == 1
        covers[0]._settle(OSError(errno.ENOSPC, "No space left on device"))  # the owner's save failed
        assert d.names(".wal") == ["000001.wal"], "kept while its records are nowhere else"
        await _written(log, log.add(b"y" * 120))
        assert d.names(".wal") == ["000001.wal", "000002.wal"] and len(covers) == 2
        covers[1]._settle(None)
        assert d.names(".wal") == [], "both are saved elsewhere now"
        await _written(log, log.add(b"z"))
        nursery.cancel_scope.cancel()
    log.close()
    assert d.names(".wal") == ["000003.wal"]
    assert AppendLog(PrivateDir(tmp_path / "p")).records()[0] == [b"z"]


def test_retire_deletes_what_a_restart_read_and_numbering_goes_on(tmp_path):
    d = PrivateDir(tmp_path / "p")
    _logged(d, b"before the crash")
    again = AppendLog(d)
    assert again.records()[0] == [b"before the crash"]
    again.add(b"after")
    again.flush()
    again.retire()
    again.close()
    assert d.names(".wal") == ["000002.wal"]
    assert AppendLog(d).records()[0] == [b"after"]


def test_a_record_must_be_one_line(tmp_path):
    with pytest.raises(ValueError, match="one line"):
        AppendLog(PrivateDir(tmp_path / "p")).add(b"two\nlines")


class BuggyDir(HeldDir):
    """A HeldDir whose log's write, once let go, fails with a bug (not an OSError: not the disk's)."""

    def open_log(self, name):
        log = super().open_log(name)
        held = log.write_durably

        def write_durably(data):
            held(b"")  # waits for the test to let it go, writes nothing
            raise RuntimeError("a bug in the write")

        log.write_durably = write_durably
        return log


def _not_on_disk(tmp_path, commit: Commit) -> None:
    """The commit failed, and nothing of its record was written."""
    assert commit.done.is_set() and isinstance(commit.error, OSError), "a record never written was settled as written"
    assert AppendLog(PrivateDir(tmp_path / "p")).records()[0] == []


async def test_a_bug_in_the_write_fails_the_run_and_its_commits_even_after_a_clean_stop_flush(tmp_path):
    d = BuggyDir(tmp_path / "p")
    log = AppendLog(d)
    commit = log.add(b"never written")
    d.go.release()
    with pytest.raises(BaseExceptionGroup) as raised:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.run)
    assert raised.group_contains(RuntimeError, match="a bug in the write", depth=1)
    log.flush()  # what the sessions' clean stop does after the saver's run ended
    log.close()
    _not_on_disk(tmp_path, commit)


async def test_a_bug_in_the_last_write_of_a_clean_stop_is_not_swallowed(tmp_path):
    d = BuggyDir(tmp_path / "p")
    log = AppendLog(d)
    with pytest.raises(BaseExceptionGroup) as raised:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.run)
            commit = log.add(b"the last prompt")
            await _in_write(d)
            nursery.cancel_scope.cancel()  # a clean stop, while the thread writes
            d.go.release()  # ... and the write then hits the bug
    assert raised.group_contains(RuntimeError, match="a bug in the write", depth=1)
    log.flush()
    log.close()
    _not_on_disk(tmp_path, commit)


async def test_a_bug_in_a_commits_callback_fails_the_run_not_the_whole_trio_run(tmp_path):
    log = AppendLog(PrivateDir(tmp_path / "p"))

    def broken(error):
        raise KeyError("a bug in a callback")

    with pytest.raises(BaseExceptionGroup) as raised:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(log.run)
            log.add(b"record").then(broken)
            await trio.sleep_forever()  # until the run fails; pytest-timeout bounds it
    assert raised.group_contains(KeyError, match="a bug in a callback", depth=1)
    log.close()
