"""A power cut loses what was written in place since the last checkpoint; the redo log brings it back.

The cut is the state directory copied with `sessions/` as the last
checkpoint of the redo log left it (empty before the first one): the most a
power cut can take of it, since nothing there is fsynced in between. The
redo log and the prompt log are copied as they are (each record is
fdatasynced before its batch or prompt is answered). An App started on the
copy must have every session, finished turn, answer and transcript line the
server had, and none it had removed.
"""

from __future__ import annotations

import os
import shutil

from anvilfs.sessions import State
from anvilfs.storage import RedoLog
from harness.apps import started, until




class Checkpoints:
    """Keeps a copy of `sessions/` as each checkpoint of the redo log made it durable."""

    def __init__(self, monkeypatch, state, keep):
        self.state, self.keep, self.count = state, keep, 0
        real_sync = RedoLog.sync

        def sync(redo, era):
            real_sync(redo, era)
            if redo.dir.path != str(self.state / "redo"):
                return  # a server started on a cut copy
            shutil.rmtree(self.keep, ignore_errors=True)
            shutil.copytree(self.state / "sessions", self.keep)
            self.count += 1

        monkeypatch.setattr(RedoLog, "sync", sync)
        keep.mkdir(mode=0o700, parents=True)


async def _settled(app) -> None:
    """No turn running, and everything the save queue had written (what a batch's answer waits for)."""
    queue = app.sessions.saver.queue
    await until(lambda: all(not s.busy for s in app.sessions.all()) and len(queue) == 0 and not queue._unsynced)


async def _cut_and_compare(app, state, durable, cut) -> None:
    await _settled(app)
    shutil.copytree(state, cut, ignore=shutil.ignore_patterns("sessions"))
    shutil.copytree(durable, cut / "sessions")  # what the files had at the last checkpoint, and no more
    had = {s.name: (s.turn_count, [p.text for p in s.queue], s.out) for s in app.sessions.all()}
    files = {p.name: p.read_bytes() for p in (state / "sessions").iterdir() if p.suffix in (".log", ".out")}
    async with started(cut) as again:
        back = {s.name: (s.turn_count, [p.text for p in s.queue], s.out) for s in again.sessions.all()}
        assert back == had, f"{cut.name}: the sessions after the cut"
        assert "- restore" not in again.events.text(), again.events.text()
    restored = {p.name: p.read_bytes() for p in (cut / "sessions").iterdir() if p.suffix in (".log", ".out")}
    assert restored == files, f"{cut.name}: the transcripts and answers after the cut"


async def test_a_power_cut_at_any_quiet_moment_loses_no_session_turn_or_answer(autojump_clock, tmp_path, monkeypatch):
    state = tmp_path / "state"
    checkpoints = Checkpoints(monkeypatch, state, tmp_path / "durable")
    async with started(state) as app:
        for name in ("bot1", "bot2", "bot3"):
            app.sessions.new("sim", "/tmp", name=name)
        app.sessions.submit("bot1", "first question", "glenda")
        app.sessions.submit("bot2", "another", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 1 and app.sessions.get("bot2").turn_count == 1)
        await _cut_and_compare(app, state, checkpoints.keep, tmp_path / "cut1")

        app.sessions.stop("bot3")
        await until(lambda: app.sessions.get("bot3").state is State.STOPPED)
        app.sessions.remove("bot3")
        await _cut_and_compare(app, state, checkpoints.keep, tmp_path / "cut2")  # it stays removed

        before = checkpoints.count  # the queue makes them itself, every CHECKPOINT_SECONDS of (virtual) time
        app.sessions.saver.queue.checkpoint()  # from here, the files in place are durable
        assert checkpoints.count == before + 1
        app.sessions.new("sim", "/tmp", name="bot3")  # the same name again: a new session
        app.sessions.submit("bot3", "hello again", "glenda")
        app.sessions.submit("bot1", "second question", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 2 and app.sessions.get("bot3").turn_count == 1)
        app.sessions.stop("bot2")
        await until(lambda: app.sessions.get("bot2").state is State.STOPPED)
        await _cut_and_compare(app, state, checkpoints.keep, tmp_path / "cut3")


async def test_a_clean_stop_leaves_nothing_to_replay(autojump_clock, tmp_path):
    async with started(tmp_path / "state") as app:
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "a question", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 1)
    assert list((tmp_path / "state" / "redo").iterdir()) == [], "a clean stop checkpoints: the files are durable"


async def test_a_turn_costs_a_few_device_flushes_not_one_per_file(autojump_clock, tmp_path, monkeypatch):
    """A turn writes its transcript, `out` and .toml (at its start and its end) and its prompt goes in the
    prompt log: one fdatasync per batch of the redo log, one for the prompt, instead of an fsync per file
    and per rename (nine a turn before the redo log)."""
    async with started(tmp_path / "state") as app:
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "warm up", "glenda")  # the first records make the log's segments
        await until(lambda: app.sessions.get("bot1").turn_count == 1)
        await _settled(app)
        flushes = []
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, lambda fd, real=real: (flushes.append(fd), real(fd))[1])
        for turn in range(2, 12):
            app.sessions.submit("bot1", f"question {turn}", "glenda")
            await until(lambda: app.sessions.get("bot1").turn_count == turn)
            await _settled(app)
        monkeypatch.undo()
    print(f"{len(flushes) / 10:.1f} flushes a turn")
    assert len(flushes) <= 10 * 4, f"{len(flushes) / 10:.1f} flushes a turn"
