"""A restarted server: sessions restored exited with their queue, files it cannot read, beads held by
sessions that ended with the old server, and a prompt the old server never typed (moved from
test_lifecycle.py as they were)."""

from __future__ import annotations

import sqlite3

import pytest
import trio

from anvilfs.app import App
from anvilfs.sessions import Agent, Backend, RestartPolicy, State
from harness.apps import started, until
from harness.stored import answered


async def stopped_mid_turn(tmp_path) -> str:
    """A server whose sim session bot1 answered once, then stopped during a hanging turn with one prompt queued;
    the answer it had."""
    async with trio.open_nursery() as nursery:
        first = App(state_dir=tmp_path)
        await nursery.start(first.run)
        s = first.sessions.new("sim", "/tmp", name="bot1", role="", model="m1")
        first.sessions.submit("bot1", "hello", "glenda")
        await until(lambda: s.state is State.AWAIT)
        first.sessions.submit("bot1", "sim:hang", "glenda")
        first.sessions.submit("bot1", "queued when the server died", "glenda")
        await until(lambda: s.state is State.RUNNING)
        nursery.cancel_scope.cancel()  # the server goes away mid-turn
        return s.out


async def test_a_restarted_server_carries_on_a_per_turn_session_where_it_was(tmp_path):
    """SPEC §5: a per-turn agent has no process to lose; the turn that was running ends error, not run again."""
    await stopped_mid_turn(tmp_path)
    async with trio.open_nursery() as nursery:
        second = App(state_dir=tmp_path)
        await nursery.start(second.run)
        r = second.sessions.get("bot1")
        assert r.state is not State.EXITED, r.status_line()
        await until(lambda: r.state is State.AWAIT)  # its queue ran, unasked: no restart was written
        assert "queued when the server died" in r.out and not r.queue
        log = r.log_text()
        assert "--- failed 2 at " in log and ": lost: the server stopped during the turn" in log, log
        assert log.count("\nsim:hang\n") == 1, log  # the lost turn's prompt is not run again
        assert "bot1 kept await" not in second.events.text() and "bot1 kept error" in second.events.text()
        nursery.cancel_scope.cancel()


async def test_an_ephemeral_per_turn_session_whose_one_turn_was_cut_short_ends_stopped(tmp_path):
    """Its one turn was the lost one (error): it does no other, and stops, as after any turn of its own."""
    async with started(tmp_path) as first:
        s = first.sessions.new("sim", "/tmp", name="e1", ephemeral=True)
        first.sessions.submit("e1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
    async with started(tmp_path) as second:
        r = second.sessions.get("e1")
        await until(lambda: r.state is State.STOPPED)
        assert r.turn_count == 1 and "--- failed 1 at " in r.log_text(), r.log_text()


async def test_a_server_started_paused_restores_per_turn_sessions_as_exited_with_their_queue(tmp_path):
    answer = await stopped_mid_turn(tmp_path)
    async with trio.open_nursery() as nursery:
        second = App(state_dir=tmp_path, paused=True)
        await nursery.start(second.run)
        r = second.sessions.get("bot1")
        assert r.state is State.EXITED and "server restarted" in r.detail
        assert [p.text for p in r.queue] == ["queued when the server died"]
        assert r.out == answer and r.definition.model == "m1"
        assert "--- prompt 1 from glenda" in r.log_text() and "lost: the server stopped" in r.log_text()
        second.sessions.restart("bot1")
        await until(lambda: r.state is State.AWAIT)
        assert "queued when the server died" in r.out
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:  # and once more: the answer survived too
        third = App(state_dir=tmp_path, paused=True)
        await nursery.start(third.run)
        assert "queued when the server died" in third.sessions.get("bot1").out
        nursery.cancel_scope.cancel()


async def test_a_damaged_session_row_is_reported_not_fatal(tmp_path):
    async with started(tmp_path) as first:
        await answered(lambda: first.sessions.new("sim", "/tmp", name="bad"))
        await answered(lambda: first.sessions.submit("bad", "keep me", "glenda"))
    with sqlite3.connect(tmp_path / "anvilfs.db") as conn:
        conn.execute("UPDATE sessions SET definition = 'this is [not json' WHERE name = 'bad'")
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path)
        await nursery.start(app.run)
        assert app.sessions.all() == []
        assert "session bad (row 1 of" in app.events.text() and "cannot be read" in app.events.text()
        nursery.cancel_scope.cancel()
    with sqlite3.connect(tmp_path / "anvilfs.db") as conn:  # its prompts wait until its row can be read
        assert conn.execute("SELECT text, state FROM prompts").fetchall() in ([("keep me", "queued")],
                                                                              [("keep me", "turn")])


async def claimed_by_w1(app: App):
    """Session w1 (sim), idle, and a bead it claimed."""
    from anvilfs.beads import Who

    s = app.sessions.new("sim", "/tmp", name="w1")
    await until(lambda: s.state is State.IDLE)
    bead = app.board.new("Task", "dev", "d")
    app.board.claim(bead.id, Who("w1", "w1"))
    return s, bead


async def test_a_bead_held_by_a_session_in_crash_backoff_is_released_when_the_server_restarts(tmp_path):
    """The backoff lived in the old server only: the restored session is exited with no restart coming."""
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path)
        await nursery.start(app.run)
        s, bead = await claimed_by_w1(app)
        app.sessions.submit("w1", "sim:exit", "glenda")
        await until(lambda: s.state is State.EXITED and "restarting in" in app.events.text())
        app.db.flush(30)
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        again = App(state_dir=tmp_path)
        await nursery.start(again.run)
        assert again.board.get(bead.id).status.value == "pending"
        nursery.cancel_scope.cancel()


async def test_a_bead_held_by_a_per_turn_session_stays_held_across_a_restart_unless_paused(tmp_path):
    """Its session did not end (item 7 of issue 32: the conductor's bead was released by a clean restart);
    a server started --paused brings the session back exited, and so releases it, as before."""
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path)
        await nursery.start(app.run)
        _, bead = await claimed_by_w1(app)
        nursery.cancel_scope.cancel()
    for paused, state, status in ((False, State.IDLE, "in_progress"), (True, State.EXITED, "pending")):
        async with trio.open_nursery() as nursery:
            again = App(state_dir=tmp_path, paused=paused)
            await nursery.start(again.run)
            assert again.sessions.get("w1").state is state, (paused, again.sessions.get("w1").status_line())
            assert again.board.get(bead.id).status.value == status, paused
            nursery.cancel_scope.cancel()


async def test_a_name_whose_old_row_cannot_be_read_is_not_given_again(running, tmp_path):
    """A session row that could not be read keeps its name: a new session must not take its place."""
    from anvilfs.errors import NameTaken

    async with started(tmp_path) as first:
        for name in ("bot1", "s1"):
            await answered(lambda name=name: first.sessions.new("sim", "/tmp", name=name))
    with sqlite3.connect(tmp_path / "anvilfs.db") as conn:
        conn.execute("UPDATE sessions SET definition = 'this is [not json'")
    app = await running(state_dir=tmp_path)
    with pytest.raises(NameTaken, match="an earlier session 'bot1'"):
        app.sessions.new("sim", "/tmp", name="bot1")
    assert app.sessions.new("sim", "/tmp").name == "s2"  # s1's row stays its own
    app.db.flush(30)
    assert app.db.read("SELECT definition FROM sessions WHERE name = 'bot1'") == [("this is [not json",)]


async def test_a_session_that_exited_with_no_restart_coming_releases_nothing_at_each_start(tmp_path):
    from anvilfs.beads import Who

    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path, restart=RestartPolicy(enabled=False))
        await nursery.start(app.run)
        s = app.sessions.new("sim", "/tmp", name="w1")
        app.sessions.submit("w1", "sim:exit", "glenda")
        await until(lambda: s.state is State.EXITED)
        bead = app.board.new("Task", "dev", "d")
        app.board.claim(bead.id, Who("glenda"), "w1")  # claimed for it after it exited: nothing of it has ended since
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        again = App(state_dir=tmp_path, restart=RestartPolicy(enabled=False))
        await nursery.start(again.run)
        assert again.board.get(bead.id).status.value == "in_progress"
        nursery.cancel_scope.cancel()


class _NeverTypedAgent(Agent):
    """Adopted mid-turn, it finds the old server never typed the turn's prompt; then it answers normally."""

    def __init__(self):
        self.prompts = []

    async def start(self) -> None:
        return None

    async def follow(self, output) -> None:
        from anvilfs.sessions import PromptNotSent
        raise PromptNotSent("the server stopped before it typed this prompt: it did not run, and is queued again")

    async def turn(self, prompt, output) -> None:
        self.prompts.append(prompt)
        output.write(f"answer to {prompt}\n")

    async def kill(self) -> None:
        return None


class _AdoptingBackend(Backend):
    kind = "test-adopt"

    def __init__(self, name: str):
        super().__init__(name)
        self.adopted = _NeverTypedAgent()

    def availability(self) -> str:
        return "ready"

    def agent(self, session, saved=None) -> Agent:
        return _NeverTypedAgent()

    async def adopt(self, session, saved):
        return self.adopted


async def test_a_prompt_the_old_server_never_typed_runs_next(tmp_path):
    """The .toml kept the turn's prompt; the agent says it never got it: it is queued again, first."""
    first = _AdoptingBackend("a")
    async with trio.open_nursery() as nursery:
        app = App(backends={"a": first}, state_dir=tmp_path)
        await nursery.start(app.run)
        s = app.sessions.new("a", "/tmp", name="t1")
        await until(lambda: s.state is State.IDLE)
        s.agent.saved = lambda: {"pane": "%1"}  # something to adopt by
        s.agent.turn = lambda prompt, output: trio.sleep_forever()  # the server dies before the turn goes anywhere
        app.sessions.submit("t1", "the lost prompt", "glenda")
        await until(lambda: s.state is State.RUNNING)
        app.sessions.submit("t1", "the next prompt", "glenda")
        nursery.cancel_scope.cancel()
    second = _AdoptingBackend("a")
    async with trio.open_nursery() as nursery:
        again = App(backends={"a": second}, state_dir=tmp_path)
        await nursery.start(again.run)
        t1 = again.sessions.get("t1")
        await until(lambda: second.adopted.prompts == ["the lost prompt", "the next prompt"])
        await until(lambda: t1.state is State.AWAIT)
        assert "queued again" in t1.log_text() and t1.out == "answer to the next prompt\n"
        nursery.cancel_scope.cancel()
