"""A hook-driven agent's answer through `out` (sessions/owned.py): who may hand it in, when, and what it does.

The agent is harness/pane_agents.py's stand-in for a tmux agent with
turn_end = "hook"; the test is its hook, writing the session's `out` file.
"""

from __future__ import annotations

import sqlite3

import pytest
import trio.testing

from anvilfs.errors import Busy, InvalidRequest, LimitExceeded, NotPermitted
from anvilfs.sessions import SessionLimits, State
from anvilfs.sessions.states import IllegalTransition
from anvilfs.tree import Caller
from harness.apps import until
from harness.stored import request
from harness.pane_agents import ANSWER, PANE, hooked, write_out


async def test_the_agents_answer_ends_its_turn_and_is_out_in_place_of_the_pane(running, tmp_path):
    app, s = await hooked(running, state_dir=tmp_path)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING and s.turn.chunks)
    _, writing = request(lambda: write_out(app, "a", "a", ANSWER), "what was written")
    assert s.state is State.AWAIT and s.out == ANSWER  # at once: the turn ended with the write
    await writing.wait()  # answered once on disk
    assert s.agent.heard == ["await"]  # the agent was told, so its turn stops following the pane
    assert "".join(s.turn.chunks) == PANE  # what `stream` showed stays what streamed
    log = s.log_text()
    assert "--- answer 1 at " in log and log.endswith(f"Z\n{ANSWER}") and "Crunching" not in log, log
    with sqlite3.connect(tmp_path / "anvilfs.db") as conn:  # on disk before the write was answered, with the answer
        assert conn.execute("SELECT state, out FROM sessions WHERE name = 'a'").fetchall() == [("await", ANSWER)]
    await until(lambda: not s.busy)  # the runner's turn returned, and found the turn ended
    assert s.out == ANSWER and s.turn_count == 1


async def test_a_turn_typed_into_the_agents_terminal_ends_with_its_answer(autojump_clock, running):
    app, s = await hooked(running)
    app.sessions.hook("a", "running")  # a person typed a prompt into the pane
    write_out(app, "a", "a", ANSWER)
    assert s.status_line() == "await" and s.out == ANSWER and "typed into the agent's terminal" in s.log_text()


async def test_only_the_sessions_own_agent_hands_in_its_answer(autojump_clock, running):
    app, s = await hooked(running)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    with pytest.raises(NotPermitted, match=r"only a's own agent hands in its answer .*uname a.*glenda is not it"):
        write_out(app, "a", "glenda", ANSWER)
    app.root.lookup("a").lookup("out").open(Caller("glenda")).clunk()  # opening it (to read it) is anyone's
    assert s.state is State.RUNNING and s.out == ""


async def test_an_answer_outside_a_turn_is_refused_and_a_late_await_too(autojump_clock, running):
    app, s = await hooked(running)
    with pytest.raises(Busy, match="hand in an answer while its turn runs: a is idle"):
        write_out(app, "a", "a", ANSWER)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    write_out(app, "a", "a", ANSWER)
    with pytest.raises(Busy, match="a is await"):
        write_out(app, "a", "a", "a second answer\n")
    await trio.testing.wait_all_tasks_blocked()  # the runner's turn has returned
    # `anvilfs hook` sends no await after an answer the server took: it would be no turn's (or the next's)
    with pytest.raises(IllegalTransition, match="no turn running|cannot take turn-done"):
        app.sessions.hook("a", "await")
    assert s.out == ANSWER and s.turn_count == 1


async def test_an_answer_begun_in_a_turn_that_ended_before_its_close_is_refused(autojump_clock, running):
    app, s = await hooked(running)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    handle = app.root.lookup("a").lookup("out").open(Caller("a"))
    handle.write(0, ANSWER.encode())
    app.sessions.hook("a", "await")  # the turn ends another way meanwhile
    await until(lambda: s.state is State.AWAIT)
    with pytest.raises(Busy, match="a is await"):
        handle.clunk()
    assert s.out == PANE  # ended by the word: the pane's text is the answer
    app.sessions.submit("a", "and now", "glenda")
    await until(lambda: s.state is State.RUNNING)
    handle = app.root.lookup("a").lookup("out").open(Caller("a"))
    handle.write(0, ANSWER.encode())
    app.sessions.hook("a", "await")
    app.sessions.submit("a", "the next", "glenda")
    await until(lambda: s.turn_count == 3 and s.state is State.RUNNING)
    with pytest.raises(Busy, match="begun in turn 2, which has ended"):  # not turn 3's, though one runs now
        handle.clunk()


async def test_an_answer_too_large_is_refused_at_its_write(autojump_clock, running):
    app, s = await hooked(running, limits=SessionLimits(max_prompt_bytes=10))
    app.sessions.submit("a", "fix", "glenda")
    await until(lambda: s.state is State.RUNNING)
    with pytest.raises(LimitExceeded, match="send at most 10 bytes: the answer for a is too long"):
        write_out(app, "a", "a", ANSWER)
    assert s.state is State.RUNNING


async def test_out_is_read_only_where_no_hook_answers(autojump_clock, running):
    app, _ = await hooked(running)
    app.sessions.new("sim", "/tmp", name="b")
    assert app.root.lookup("b").lookup("out").mode == 0o400 and app.root.lookup("a").lookup("out").mode == 0o600
    with pytest.raises(InvalidRequest, match="b is on sim backend sim"):
        app.sessions.owners.check_answer("b", 5, "b")
