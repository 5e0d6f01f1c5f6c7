"""Sessions in the database (sessions/store.py, saving.py): rows, prompt states, history, restore, refusals.

Real SQLite on a real disk through the App, with the real clock (the writer is a thread).
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from anvilfs.errors import AnvilError, NameTaken
from anvilfs.sessions import RestartPolicy, State
from harness.apps import started, until
from harness.stored import FullDatabase, answered


def rows(app, sql, params=()):
    app.db.flush(30)
    return app.db.read(sql, params)


def checked_at_every_commit(app) -> list[str]:
    """After each job the writer runs: every session's row and its prompts agree (a `running` row with a
    prompted turn has exactly that one prompt in `turn`; no other row has one). Broken rules are collected."""
    broken: list[str] = []
    call = app.db.call

    def checking(work, *, barrier=False):
        def checked(conn):
            result = work(conn)
            for sid, state, began in conn.execute("SELECT id, state, turn_started FROM sessions"):
                turns = conn.execute("SELECT count(*) FROM prompts WHERE session = ? AND state = 'turn'",
                                     (sid,)).fetchone()[0]
                if turns > 1 or (turns and (state != "running" or not began)):
                    broken.append(f"session {sid} is {state} with {turns} prompts in a turn")
            return result
        return call(checked, barrier=barrier)

    app.db.call = checking
    return broken


async def test_a_prompt_is_one_row_that_moves_with_its_turn_in_the_same_job(tmp_path):
    async with started(tmp_path) as app:
        broken = checked_at_every_commit(app)
        s = await answered(lambda: app.sessions.new("sim", "/tmp", name="bot1"))
        await answered(lambda: app.sessions.submit("bot1", "first", "glenda"))
        await until(lambda: s.state is State.AWAIT)
        await answered(lambda: app.sessions.submit("bot1", "sim:hang", "glenda"))
        await until(lambda: s.state is State.RUNNING)
        await answered(lambda: app.sessions.submit("bot1", "behind it", "glenda"))
        assert rows(app, "SELECT seq, text, state FROM prompts ORDER BY seq") == [
            (1, "first", "done"), (2, "sim:hang", "turn"), (3, "behind it", "queued")]
        assert rows(app, "SELECT state, turns FROM sessions") == [("running", 2)]
        await answered(lambda: app.sessions.stop("bot1"))
        assert rows(app, "SELECT seq, state FROM prompts ORDER BY seq") == [(1, "done"), (2, "done"), (3, "dropped")]
        assert rows(app, "SELECT state, turn_started FROM sessions") == [("stopped", "")]
    assert broken == []


async def test_a_restart_reads_each_session_as_its_rows_have_it(tmp_path):
    async with started(tmp_path, restart=RestartPolicy(enabled=False)) as app:
        s = app.sessions.new("sim", "/tmp", name="bot1", model="m1", notify=True)
        app.sessions.submit("bot1", "hello", "glenda")
        await until(lambda: s.state is State.AWAIT)
        app.sessions.submit("bot1", "sim:exit", "glenda")
        await until(lambda: s.state is State.EXITED)
        await answered(lambda: app.sessions.submit("bot1", "waits", "glenda"))
        had = (s.definition, s.status_line(), s.turn_count, s.out, s.log_text(), s.prompt_seq)
    async with started(tmp_path, restart=RestartPolicy(enabled=False)) as again:
        r = again.sessions.get("bot1")
        assert (r.definition, r.status_line(), r.turn_count, r.out, r.log_text(), r.prompt_seq) == had
        assert [(p.text, p.seq) for p in r.queue] == [("waits", 3)]


async def test_a_removed_session_keeps_its_rows_as_history_and_frees_its_name(tmp_path):
    async with started(tmp_path) as app:
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "remember me", "glenda")
        await until(lambda: s.state is State.AWAIT)
        app.sessions.stop("bot1")
        await answered(lambda: app.sessions.remove("bot1"))
        assert f"bot1 removed; its record is kept in {tmp_path}/anvilfs.db as history" in app.events.text()
        again = await answered(lambda: app.sessions.new("sim", "/tmp", name="bot1"))
        history = rows(app, "SELECT id, removed_at IS NOT NULL FROM sessions WHERE name = 'bot1' ORDER BY id")
        assert history == [(s.row, 1), (again.row, 0)]
        assert "remember me" in "".join(t for (t,) in rows(app, "SELECT text FROM session_log WHERE session = ?",
                                                             (s.row,)))
    async with started(tmp_path) as restarted:
        [r] = restarted.sessions.all()
        assert r.definition == again.definition and "remember me" not in r.log_text()


async def test_a_row_that_cannot_be_read_is_reported_and_its_name_not_given_again(tmp_path):
    async with started(tmp_path) as app:
        await answered(lambda: app.sessions.new("sim", "/tmp", name="bot1"))
        await answered(lambda: app.sessions.new("sim", "/tmp", name="bot2"))
    with sqlite3.connect(tmp_path / "anvilfs.db") as conn:
        conn.execute("UPDATE sessions SET definition = '{\"broken' WHERE name = 'bot1'")
    async with started(tmp_path) as app:
        assert [s.name for s in app.sessions.all()] == ["bot2"]
        assert "session bot1 (row 1 of" in app.events.text() and "cannot be read" in app.events.text()
        with pytest.raises(NameTaken, match="an earlier session 'bot1'"):
            app.sessions.new("sim", "/tmp", name="bot1")


async def test_a_new_session_the_disk_refused_is_not_made(tmp_path):
    async with started(tmp_path) as app:
        disk = FullDatabase(app.db)
        with pytest.raises(AnvilError, match=r"^the write not saved: the disk refused it \(No space left"):
            await answered(lambda: app.sessions.new("sim", "/tmp", name="boom"))
        assert app.sessions.find("boom") is None and "boom not made: its save failed" in app.events.text()
        disk.full = False
        await answered(lambda: app.sessions.new("sim", "/tmp", name="boom"))  # the name is free
    async with started(tmp_path) as again:
        assert [s.name for s in again.sessions.all()] == ["boom"]


async def test_a_save_and_a_transcript_the_disk_refused_are_written_once_it_takes_them(tmp_path):
    async with started(tmp_path) as app:
        s = await answered(lambda: app.sessions.new("sim", "/tmp", name="bot1"))
        await until(lambda: s.state is State.IDLE)
        disk = FullDatabase(app.db)
        app.sessions.submit("bot1", "one", "glenda")  # refused: not queued
        await until(lambda: not s.incoming)
        assert not s.queue
        s.record("--- a note the disk refused\n")
        app.sessions.clear("bot1")  # its save is refused too
        await until(lambda: "cannot save the state of bot1" in app.events.text())
        disk.full = False
        app.sessions.submit("bot1", "two", "glenda")
        await until(lambda: s.state is State.AWAIT)
        await until(lambda: rows(app, "SELECT state FROM sessions") == [("await",)])
        logged = lambda: "".join(t for (t,) in rows(app, "SELECT text FROM session_log ORDER BY n"))  # noqa: E731
        await until(lambda: logged() == s.log_text(), "every record, in its place, once retried")
        assert "--- a note the disk refused\n--- cleared at" in logged()
        disk.full = True  # refused again, after it was saved: said again
        app.sessions.save(s)
        await until(lambda: app.events.text().count("cannot save the state of bot1") == 2)


async def test_the_agents_saved_data_and_the_definition_are_json(tmp_path):
    async with started(tmp_path) as app:
        s = await answered(lambda: app.sessions.new("sim", "/tmp", name="bot1", model="m1"))
        definition, agent = rows(app, "SELECT definition, agent FROM sessions")[0]
        assert json.loads(definition)["model"] == "m1" and json.loads(agent) == s.agent.saved()
