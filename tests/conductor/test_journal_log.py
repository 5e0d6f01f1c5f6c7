"""The conductor's record log: each record on disk before it counts, in order, lanes sharing fdatasyncs."""

from __future__ import annotations

import os
import threading

import trio
import trio.testing

from conductor import journal
from conductor.journal import GroupLog, Journal, read_record


def counting_fdatasync(monkeypatch) -> list[int]:
    """fdatasync calls, each noted with the thread that made it."""
    calls, real = [], os.fdatasync

    def fdatasync(fd):
        calls.append(threading.get_ident())
        real(fd)

    monkeypatch.setattr(journal.os, "fdatasync", fdatasync)
    return calls


async def test_begins_that_come_together_share_fdatasyncs_made_off_the_loop(tmp_path, monkeypatch):
    rec = Journal.open(tmp_path, "wf", "digest")
    calls = counting_fdatasync(monkeypatch)
    async with trio.open_nursery() as nursery:
        for lane in range(20):  # twenty lanes' prompts at once
            nursery.start_soon(rec.begin, f"ask[s{lane}]@1", {"text": f"prompt {lane}"})
    assert 1 <= len(calls) < 20, f"{len(calls)} fdatasyncs for 20 records"
    assert threading.get_ident() not in calls  # none in the event loop's thread
    rec.finish("ask[s0]@1", {"targets": ["s0"]})  # in the loop, after them
    rec.close()
    again = read_record(tmp_path, "wf")
    assert sorted(again["pending"]) == sorted(f"ask[s{lane}]@1" for lane in range(1, 20))
    assert again["done"] == {"ask[s0]@1": {"targets": ["s0"]}}


async def test_a_record_written_now_goes_after_those_on_their_way(tmp_path):
    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    log = GroupLog(fd)
    async with trio.open_nursery() as nursery:
        for n in range(5):
            nursery.start_soon(log.write, f"{n}\n".encode(), f"r{n}")
        await trio.testing.wait_all_tasks_blocked()  # the first writer is in its thread, the rest queued
        log.write_now(b"now\n", "now")  # waits for the thread's write, then writes what is queued, then its own
    os.close(fd)
    lines = (tmp_path / "log").read_bytes().split()
    assert lines[-1] == b"now" and sorted(lines[:-1]) == [b"0", b"1", b"2", b"3", b"4"]


async def test_a_cancelled_writer_still_writes_for_the_others(tmp_path):
    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    log = GroupLog(fd)
    done = []

    async def other() -> None:
        await log.write(b"other\n", "other")
        done.append("other")

    async with trio.open_nursery() as nursery:
        with trio.CancelScope() as scope:
            nursery.start_soon(other)
            scope.cancel()
            await log.write(b"first\n", "first")  # shielded: it writes, for itself and the other
    os.close(fd)
    assert done == ["other"] and sorted((tmp_path / "log").read_bytes().split()) == [b"first", b"other"]
