"""Answered prompts stay on disk across crashes, at every instant: a prompt is one row of the database.

A crash is the state directory copied at the instant a prompt's write is
answered, with the database as its last commit left it (what SIGKILL
leaves: harness/stored.py's crash_copy), then an App started on the copy.
"""

from __future__ import annotations

import errno
import sqlite3

import trio

from anvilfs.sessions import RestartPolicy, State
from harness.apps import started, until
from harness.stored import crash_copy


def restarted(state):
    """The app started on a copy: paused, so each session's queue stays as the restart found it (a
    per-turn session would otherwise run it at once, SPEC §5)."""
    return started(state, paused=True)


async def _copied_at_the_answer(tmp_path, text: str, meanwhile=lambda app, session: None):
    """The state directory as a SIGKILL at a prompt's answer leaves it: `bot1` runs a turn, `text` is
    prompted (`meanwhile(app, session)` runs in the same tick), and the directory is copied to
    tmp_path/crashed in the tick the prompt's write is answered."""
    async with started(tmp_path / "state") as first:
        s = first.sessions.new("sim", "/tmp", name="bot1")
        first.sessions.submit("bot1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
        answer = first.sessions.submit("bot1", text, "glenda")
        meanwhile(first, s)
        await answer.wait()
        crash_copy(tmp_path / "state", tmp_path / "crashed")
    return tmp_path / "crashed"


async def test_a_prompt_answered_is_queued_after_a_crash_once_and_never_in_a_new_session_of_its_name(tmp_path):
    """The state copied at the instant the prompt's write is answered has it, queued; a second restart
    has it once; and the queue of a session removed is never applied to a new one of the same name."""
    crashed = await _copied_at_the_answer(tmp_path, "answered, then the server died")
    for restart in (1, 2):
        async with restarted(crashed) as app:
            r = app.sessions.get("bot1")
            assert [p.text for p in r.queue] == ["answered, then the server died"], f"restart {restart}"
            assert r.prompt_seq == 2
    async with restarted(crashed) as app:
        app.sessions.remove("bot1")
        app.sessions.new("sim", "/tmp", name="bot1")
    async with restarted(crashed) as app:
        assert not app.sessions.get("bot1").queue, "the removed session's prompt came into the new one"


async def test_a_save_while_a_prompt_is_on_its_way_does_not_drop_it(tmp_path):
    """A save of the session while the prompt is incoming (a hook, a ctl command), then a crash at the
    prompt's answer: the save did not take the prompt's row for dropped."""
    crashed = await _copied_at_the_answer(tmp_path, "on its way", lambda app, s: app.sessions.save(s))
    async with restarted(crashed) as app:
        assert [p.text for p in app.sessions.get("bot1").queue] == ["on its way"]


async def test_the_prompts_a_restart_found_are_still_there_if_it_is_killed_at_once(tmp_path):
    await _copied_at_the_answer(tmp_path, "answered")
    async with restarted(tmp_path / "crashed"):  # restarted, and killed as soon as it has started
        crash_copy(tmp_path / "crashed", tmp_path / "again")
    async with restarted(tmp_path / "again") as third:
        assert [p.text for p in third.sessions.get("bot1").queue] == ["answered"]


async def test_a_restart_of_a_running_session_never_leaves_it_saved_stopped_without_its_queue(tmp_path):
    async with started(tmp_path / "state") as app:
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
        await app.sessions.submit("bot1", "queued", "glenda").wait()
        app.sessions.restart("bot1")
        app.db.flush(30)
        crash_copy(tmp_path / "state", tmp_path / "crashed")  # a crash right after the restart
    async with restarted(tmp_path / "crashed") as again:
        r = again.sessions.get("bot1")
        assert r.state is not State.STOPPED and [p.text for p in r.queue] == ["queued"]


async def test_a_session_removed_while_a_prompt_is_on_its_way_stays_removed(tmp_path):
    """The prompt lands after the remove: it must not bring the removed session back, nor join the
    queue of a new session of the same name."""
    async with started(tmp_path, restart=RestartPolicy(enabled=False)) as app:
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:exit", "glenda")
        await until(lambda: s.state is State.EXITED)
        late = app.sessions.submit("bot1", "late", "glenda")  # an exited session takes prompts
        app.sessions.remove("bot1")  # in the same tick: the prompt is still on its way
        await late.wait()
        assert app.sessions.find("bot1") is None
        new = app.sessions.new("sim", "/tmp", name="bot1")
        await until(lambda: new.state is State.IDLE)
    async with started(tmp_path) as app:
        [restored] = app.sessions.all()
        assert restored.definition.conversation == new.definition.conversation and not restored.queue


async def test_at_every_answer_each_answered_prompt_is_on_disk(tmp_path):
    """The state directory copied at each prompt's answer, restarted, has every prompt answered, in order."""
    async with started(tmp_path / "state") as app:
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
        for i in range(6):
            await app.sessions.submit("bot1", f"prompt {i} " + "x" * 100, "glenda").wait()
            crash_copy(tmp_path / "state", tmp_path / f"at{i}")
            await trio.sleep(0.05)  # other commits (the turn's, the transcript's) in between
    for i in range(6):
        async with restarted(tmp_path / f"at{i}") as again:
            texts = [p.text.split()[1] for p in again.sessions.get("bot1").queue]
            assert texts == [str(k) for k in range(i + 1)], f"at the answer of prompt {i}"


async def test_a_prompt_answered_while_the_transcript_cannot_be_written_is_on_disk(running, tmp_path):
    """The transcript's records are refused (their commits fail); a prompt's row is its own change: it is
    on disk when its write is answered, and the transcript catches up, in order, once the disk takes it."""
    app = await running(state_dir=tmp_path)
    s = app.sessions.new("sim", "/tmp", name="bot1")
    await until(lambda: s.state is State.IDLE)
    store, refusing = app.sessions.store, [True]
    real_log = store.log

    def refused_log(lines):
        lines = list(lines)

        def work(conn):
            if refusing[0]:
                raise OSError(errno.EIO, "Input/output error")
            return conn.executemany("INSERT OR REPLACE INTO session_log (n, session, text) VALUES (?, ?, ?)", lines)
        return app.db.call(work) if refusing[0] else real_log(lines)

    store.log = refused_log
    app.sessions.submit("bot1", "one", "glenda")
    await until(lambda: s.state is State.AWAIT)
    await app.sessions.submit("bot1", "two", "glenda").wait()  # answered: its row is on disk
    crashed = crash_copy(tmp_path, tmp_path.parent / "crashed")
    with sqlite3.connect(crashed / "anvilfs.db") as conn:
        assert conn.execute("SELECT seq, state FROM prompts WHERE text = 'two'").fetchall() in ([(2, "queued")],
                                                                                               [(2, "turn")])
    refusing[0] = False  # the disk is back: the transcript catches up
    await until(lambda: s.turn_count == 2 and s.state is State.AWAIT)
    await until(lambda: "".join(t for (t,) in app.db.read("SELECT text FROM session_log ORDER BY n")) == s.log_text())
