"""A power cut loses nothing committed: every session, finished turn, answer and transcript line comes back.

With the sessions in the database (synchronous=FULL: a commit returns once
the write-ahead log is fsynced), what a power cut leaves of the state is
its last commit: the cut here is the state directory copied with the
database as that commit left it (harness/stored.py's crash_copy), once the
turns have settled and their changes were committed. An App started on the
copy must have every session, finished turn, answer and transcript line the
server had, and none it had removed. That SQLite keeps what it committed
through a real cut is the power-cut harness's to show (tests/harness/, the
`powercut` branch: an LD_PRELOAD shim under real server processes).
"""

from __future__ import annotations

import os

from anvilfs.sessions import State
from harness.apps import started, until
from harness.stored import crash_copy


async def _settled(app) -> None:
    """No turn running, and everything queued committed (what a power cut now leaves)."""
    await until(lambda: all(not s.busy for s in app.sessions.all()))
    app.db.flush(30)


def _seen(app) -> dict:
    return {s.name: (s.turn_count, [p.text for p in s.queue], s.out, s.log_text()) for s in app.sessions.all()}


async def _cut_and_compare(app, state, cut) -> None:
    await _settled(app)
    crash_copy(state, cut)
    had = _seen(app)
    async with started(cut) as again:
        assert _seen(again) == had, f"{cut.name}: the sessions, turns, answers and transcripts after the cut"
        assert "- restore" not in again.events.text(), again.events.text()


async def test_a_power_cut_at_any_quiet_moment_loses_no_session_turn_or_answer(tmp_path):
    state = tmp_path / "state"
    async with started(state) as app:
        for name in ("bot1", "bot2", "bot3"):
            app.sessions.new("sim", "/tmp", name=name)
        app.sessions.submit("bot1", "first question", "glenda")
        app.sessions.submit("bot2", "another", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 1 and app.sessions.get("bot2").turn_count == 1)
        await _cut_and_compare(app, state, tmp_path / "cut1")

        app.sessions.stop("bot3")
        await until(lambda: app.sessions.get("bot3").state is State.STOPPED)
        app.sessions.remove("bot3")
        await _cut_and_compare(app, state, tmp_path / "cut2")  # it stays removed

        app.sessions.new("sim", "/tmp", name="bot3")  # the same name again: a new session
        app.sessions.submit("bot3", "hello again", "glenda")
        app.sessions.submit("bot1", "second question", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 2 and app.sessions.get("bot3").turn_count == 1)
        app.sessions.stop("bot2")
        await until(lambda: app.sessions.get("bot2").state is State.STOPPED)
        await _cut_and_compare(app, state, tmp_path / "cut3")


async def test_a_clean_stop_leaves_nothing_to_replay(tmp_path):
    async with started(tmp_path / "state") as app:
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "a question", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 1)
    wal = tmp_path / "state" / "anvilfs.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0, "a clean stop checkpoints: the database file is whole"


async def test_a_turn_costs_a_few_commits_and_no_flush_in_the_event_loop(tmp_path, monkeypatch):
    """A turn's prompt, its start, its transcript and its end are changes queued together: a few commits a
    turn (each one fsync of the write-ahead log, in the writer thread), and no fsync from Python at all."""
    async with started(tmp_path / "state") as app:
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "warm up", "glenda")
        await until(lambda: app.sessions.get("bot1").turn_count == 1)
        await _settled(app)
        flushes = []
        for name in ("fsync", "fdatasync"):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, lambda fd, real=real: (flushes.append(fd), real(fd))[1])
        before = app.db.commits
        for turn in range(2, 12):
            await app.sessions.submit("bot1", f"question {turn}", "glenda").wait()
            await until(lambda: app.sessions.get("bot1").turn_count == turn)
            await _settled(app)
        commits = app.db.commits - before - 10  # the flush of each _settled is a commit of its own
        monkeypatch.undo()
    print(f"{commits / 10:.1f} commits a turn")
    assert flushes == [], "sessions write nothing but through the database"
    assert commits <= 10 * 4, f"{commits / 10:.1f} commits a turn"
