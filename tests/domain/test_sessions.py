"""Session lifecycle on the sim backend, without 9P (SPEC §5)."""

from __future__ import annotations

import itertools
import re

import pytest
import trio
import trio.testing

from anvilfs.app import App
from anvilfs.errors import Busy, InvalidRequest, LimitExceeded, NameTaken, NotFound, TooMany
from anvilfs.fs.cursors import JournalCursor, StreamCursor, WaitCursor
from anvilfs.sessions import SERVER_NAMES, SessionLimits, State
from anvilfs.sessions.states import TRANSITIONS, Event, IllegalTransition, advance
from harness.apps import until
from harness.deadlines import WAIT, within


def test_every_state_event_pair_is_in_the_table_or_refused():
    for state, event in itertools.product(State, Event):
        if (state, event) in TRANSITIONS:
            assert advance(state, event) is TRANSITIONS[(state, event)]
        else:
            with pytest.raises(IllegalTransition, match=f"cannot take {event.value}"):
                advance(state, event)


def test_every_state_is_reachable_from_starting():
    seen, frontier = {State.STARTING}, [State.STARTING]
    while frontier:
        state = frontier.pop()
        for (s, _), target in TRANSITIONS.items():
            if s is state and target not in seen:
                seen.add(target)
                frontier.append(target)
    assert seen == set(State)


async def test_prompt_runs_a_turn_and_answer_lands_in_out(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    assert s.state is State.STARTING and s.busy
    await until(lambda: s.state is State.IDLE)
    app.sessions.submit("bot1", "hello there", "glenda")
    assert s.busy  # queued counts as busy before the turn starts
    await until(lambda: not s.busy)
    assert s.state is State.AWAIT
    assert s.out.startswith("[simulated] bot1, turn 1")
    assert "hello there" in s.out
    assert "--- prompt 1 from glenda" in s.log_text()
    assert s.status_line() == "await simulated"
    events = app.events.text()
    assert "bot1 new backend=sim cwd=/tmp simulated" in events
    assert "bot1 await simulated" in events


async def test_prompts_sent_while_busy_queue_in_order(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    for word in ("first", "second", "third"):
        app.sessions.submit("bot1", word, "glenda")
    assert len(s.queue) == 3
    await until(lambda: not s.busy)
    log = s.log_text()
    assert log.index("first") < log.index("second") < log.index("third")
    assert s.turn_count == 3 and "turn 3" in s.out


async def test_failed_turn_goes_to_error_and_session_stays_usable(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "please sim:fail", "glenda")
    await until(lambda: not s.busy)
    assert s.state is State.ERROR
    assert s.status_line().startswith("error simulated simulated failure")
    # the agent's own text is where every error's full text is: agent/errors
    assert "bot1: error simulated simulated failure: the prompt said sim:fail" in app.errors.text()
    app.sessions.submit("bot1", "again", "glenda")
    await until(lambda: not s.busy)
    assert s.state is State.AWAIT


async def test_stop_during_a_turn_and_restart(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:hang", "glenda")
    app.sessions.submit("bot1", "never runs", "glenda")
    await until(lambda: s.state is State.RUNNING)
    app.sessions.stop("bot1")
    assert s.state is State.STOPPED and not s.busy
    assert s.detail == "1 queued prompts dropped"
    with pytest.raises(Busy, match="write 'restart'"):
        app.sessions.submit("bot1", "x", "glenda")
    with pytest.raises(Busy, match="already stopped"):
        app.sessions.stop("bot1")
    await trio.testing.wait_all_tasks_blocked()
    assert s.state is State.STOPPED  # the cancelled runner did not touch it
    app.sessions.restart("bot1")
    await until(lambda: s.state is State.IDLE)


async def test_ephemeral_session_stops_after_one_turn(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="once", ephemeral=True)
    app.sessions.submit("once", "do it", "glenda")
    await until(lambda: s.state is State.STOPPED)
    assert "turn 1" in s.out
    with pytest.raises(InvalidRequest, match="ephemeral"):
        app.sessions.restart("once")


async def test_agent_exit_goes_to_exited(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:exit", "glenda")
    await until(lambda: s.state is State.EXITED)
    assert "sim:exit" in s.detail


async def test_checks_on_new_and_prompt(running):
    app = await running(limits=SessionLimits(max_sessions=2, max_prompt_bytes=10))
    with pytest.raises(NotFound, match="known backends: sim"):
        app.sessions.new("claude", "/tmp")
    with pytest.raises(InvalidRequest, match="absolute path of a directory"):
        app.sessions.new("sim", "/no/such/dir")
    with pytest.raises(InvalidRequest, match="absolute path of a directory"):
        app.sessions.new("sim", "relative")
    for bad in ("a/b", "..", "x\ny", ""):
        if bad:
            with pytest.raises(InvalidRequest, match="is invalid"):
                app.sessions.new("sim", "/tmp", name=bad)
    with pytest.raises(NameTaken, match="file beside the sessions"):
        app.sessions.new("sim", "/tmp", name="list")
    assert app.sessions.new("sim", "/tmp").name == "s1"
    app.sessions.new("sim", "/tmp", name="b")
    with pytest.raises(TooMany, match="too long at 2"):
        app.sessions.new("sim", "/tmp", name="c")
    with pytest.raises(NameTaken, match="already exists"):
        app.sessions.new("sim", "/tmp", name="b")
    with pytest.raises(LimitExceeded, match="at most 10"):
        app.sessions.submit("b", "x" * 11, "glenda")
    with pytest.raises(NotFound, match="no such session 'zz'"):
        app.sessions.submit("zz", "x", "glenda")


async def test_wait_cursor_blocks_while_busy_then_gives_state(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    cursor = WaitCursor(s)
    assert not cursor.ready(0)
    app.sessions.submit("bot1", "hi", "glenda")
    with within(WAIT, "wait to be ready when the turn ends"):
        await cursor.wait_ready(0)
    assert s.state is State.AWAIT
    assert cursor.read(0, 100) == b"await\n"
    assert cursor.ready(6) and cursor.read(6, 100) == b""


async def test_stream_cursor_follows_the_next_turn_to_its_end(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    cursor = StreamCursor(s)
    app.sessions.submit("bot1", "hi", "glenda")
    got = bytearray()
    while True:
        with within(WAIT, f"more of the stream after {bytes(got)!r}"):
            await cursor.wait_ready(0)
        data = cursor.read(0, 7)  # small reads split chunks without losing bytes
        if not data:
            break
        assert len(data) <= 7
        got += data
    assert got.decode() == s.out


async def test_stream_cursor_ends_when_session_stops_before_a_turn(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    cursor = StreamCursor(s)
    assert not cursor.ready(0)
    app.sessions.stop("bot1")
    assert cursor.ready(0) and cursor.read(0, 10) == b""


async def test_events_cursor_sees_lines_from_open_and_reports_losses():
    app = App()
    app.events.append("before")
    cursor = JournalCursor(app.events)
    assert not cursor.ready(0)
    app.events.append("after")
    assert cursor.ready(0)
    assert cursor.read(0, 1000).decode().endswith(" after\n")
    for i in range(1200):
        app.events.append(f"line {i}")
    text = cursor.read(0, 1 << 20).decode()
    # TIME SESSION WHAT like every line: the time first, "-" for the server
    when, who, what, *rest = text.splitlines()[0].split()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", when), text[:80]
    assert (who, what, rest[0]) == ("-", "events-lost", "200"), text[:80]
    assert text.endswith(" line 1199\n")


@pytest.mark.parametrize("name", ["ctl", "list", "events", "backends", "errors", "roles", "human", "beads", "convoys",
                                  *sorted(SERVER_NAMES)])
async def test_a_session_cannot_take_the_name_of_a_file_beside_it(autojump_clock, running, name):
    app = await running()
    # the root's own files, and the names kept for the server's files to come: one list
    assert app.sessions.reserved == app.tree.root.fixed_names() | SERVER_NAMES
    with pytest.raises(NameTaken, match=f"{name!r} is reserved for a file beside the sessions"):
        app.sessions.new("sim", "/tmp", name=name)
