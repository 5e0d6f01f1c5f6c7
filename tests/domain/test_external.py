"""External sessions without 9P: the owner's reports, prompts and answers, and what others do to them (SPEC §5).

The owner is the test, calling what the session's files call (Sessions.owners,
the `next` cursor); the rest of the server (stop, interrupt, wait, beads,
restore from a state directory) is the real one.
"""

from __future__ import annotations

import sqlite3

import pytest
import trio
import trio.testing

from anvilfs.app import App
from anvilfs.backends import ExternalBackend, SimBackend, build_backends
from anvilfs.beads import Who
from anvilfs.config import parse_config
from anvilfs.errors import Busy, InvalidRequest, LimitExceeded
from anvilfs.fs.cursors import NextCursor, WaitCursor
from anvilfs.sessions import State
from anvilfs.sessions.states import IllegalTransition
from harness.apps import until
from harness.deadlines import WAIT, within


def backends():
    return {"external": ExternalBackend(), "sim": SimBackend()}


async def conductor(running, **kwargs):
    app = await running(backends=backends(), **kwargs)
    s = app.sessions.new("external", "/tmp", name="review1", role="conductor")
    await until(lambda: s.state is State.IDLE)
    return app, s


def take(app: App, session) -> str:
    cursor = NextCursor(app.sessions.owners, session)
    assert cursor.ready(0), session.status_line()
    return cursor.read(0, 1 << 20).decode()


def test_external_is_a_built_in_backend_that_is_always_ready_and_not_simulated():
    built = build_backends(parse_config("", "config.toml"), tmux_session="anvilfs-test")
    external = built["external"]
    assert (external.kind, external.availability(), external.simulated, external.owner_driven) == (
        "external", "ready", False, True)
    replaced = build_backends(parse_config('[backends.conductor]\nkind = "external"\n', "c.toml"), tmux_session="t")
    assert replaced["conductor"].owner_driven


async def test_a_new_external_session_is_idle_at_once_with_no_pid_and_a_role_that_is_only_a_label(autojump_clock, running):
    app, s = await conductor(running)  # no role file `conductor` exists: for an owner it is a label
    assert s.status_line() == "idle" and s.agent.pid is None and not s.simulated
    assert "review1 new backend=external cwd=/tmp\n" in app.events.text()
    with pytest.raises(InvalidRequest, match="ephemeral is invalid"):
        app.sessions.new("external", "/tmp", name="once", ephemeral=True)
    with pytest.raises(InvalidRequest, match="name the role"):
        app.sessions.new("external", "/tmp", name="bad", role="a/b")


async def test_running_with_detail_begins_a_turn_and_again_updates_the_detail(autojump_clock, running):
    app, s = await conductor(running)
    owners = app.sessions.owners
    owners.report("review1", "running workflow=review step=fix round=1", "cond")
    assert s.status_line() == "running workflow=review step=fix round=1" and s.busy
    owners.report("review1", "running workflow=review step=fix round=2", "cond")
    assert (s.state, s.turn_count) == (State.RUNNING, 1)  # the same turn, new detail
    events = app.events.text()
    assert "review1 running workflow=review step=fix round=1\n" in events
    assert "review1 running workflow=review step=fix round=2\n" in events
    assert "--- begun 1 by cond at " in s.log_text() and "workflow=review step=fix round=1\n" in s.log_text()
    owners.report("review1", "await converged", "cond")
    assert s.status_line() == "await converged" and s.out == ""  # ended with no answer
    owners.report("review1", "await converged round=2", "cond")  # the state it is in: the detail only
    assert s.status_line() == "await converged round=2" and s.turn_count == 1


async def test_impossible_and_malformed_status_writes_are_refused_with_what_to_do(autojump_clock, running):
    app, s = await conductor(running)
    owners = app.sessions.owners
    with pytest.raises(IllegalTransition, match="status await: a session that is idle cannot take turn-done; "
                                                "from idle it can take: .*turn-began"):
        owners.report("review1", "await", "cond")
    with pytest.raises(InvalidRequest, match=r"write running\|await\|error \[DETAIL...\]: 'stopped'"):
        owners.report("review1", "stopped", "cond")
    with pytest.raises(LimitExceeded, match="at most 200 characters"):
        owners.report("review1", "running " + "x" * 201, "cond")
    with pytest.raises(InvalidRequest, match="leave control characters out"):
        owners.report("review1", "running a\tb", "cond")
    with pytest.raises(InvalidRequest, match="another word than 'simulated'"):
        owners.report("review1", "running simulated round=1", "cond")
    assert s.status_line() == "idle" and s.turn_count == 0  # nothing refused changed anything
    app.sessions.new("sim", "/tmp", name="bot1")
    with pytest.raises(InvalidRequest, match="bot1 is on sim backend sim, which runs its own turns"):
        owners.report("bot1", "running", "cond")


async def test_error_ends_the_turn_failed_and_the_next_turn_may_begin(autojump_clock, running):
    app, s = await conductor(running)
    owners = app.sessions.owners
    owners.report("review1", "running step=gate", "cond")
    owners.report("review1", "error gate exited 1", "cond")
    assert s.status_line() == "error gate exited 1" and "--- failed 1 at " in s.log_text()
    owners.report("review1", "running step=gate again", "cond")
    assert s.state is State.RUNNING and s.turn_count == 2


async def test_out_is_the_running_turns_answer_and_ends_it(autojump_clock, running):
    app, s = await conductor(running)
    owners = app.sessions.owners
    with pytest.raises(Busy, match="begin a turn first .* review1 is idle"):
        owners.check_answer("review1", 5)
    owners.check_answer("review1", 0)  # opening out to read it is never refused
    owners.report("review1", "running workflow=review", "cond")
    owners.answer("review1", "no issues left after round 2\n")
    assert s.status_line() == "await" and s.out == "no issues left after round 2\n"
    assert "--- answer 1 at " in s.log_text() and s.log_text().endswith("no issues left after round 2\n")
    with pytest.raises(Busy, match="review1 is await"):
        owners.answer("review1", "a second answer")


async def test_an_answer_larger_than_a_prompt_may_be_is_refused(autojump_clock, running):
    from anvilfs.sessions import SessionLimits

    app, s = await conductor(running, limits=SessionLimits(max_prompt_bytes=10))
    app.sessions.owners.report("review1", "running", "cond")
    with pytest.raises(LimitExceeded, match="at most 10 bytes: the answer for review1 is too long"):
        app.sessions.owners.check_answer("review1", 11)


async def test_next_takes_the_oldest_prompt_which_begins_its_turn_and_gives_it_again_until_it_ends(autojump_clock, running):
    app, s = await conductor(running)
    cursor = NextCursor(app.sessions.owners, s)
    assert not cursor.ready(0)  # nothing queued: a read blocks
    app.sessions.submit("review1", "review the parser", "glenda")
    app.sessions.submit("review1", "then the codec", "glenda")
    assert s.busy and s.state is State.IDLE  # queued, not taken: wait blocks, the status says idle
    assert take(app, s) == "review the parser"
    assert (s.state, len(s.queue), s.turn.prompt.sender) == (State.RUNNING, 1, "glenda")
    assert "--- prompt 1 from glenda at " in s.log_text()
    assert take(app, s) == "review the parser"  # an owner that read it and died finds it again
    app.sessions.owners.answer("review1", "parser: fine\n")
    assert take(app, s) == "then the codec" and s.turn_count == 2


async def test_next_waits_while_the_owner_runs_a_turn_of_its_own(autojump_clock, running):
    app, s = await conductor(running)
    app.sessions.owners.report("review1", "running workflow=review", "cond")
    app.sessions.submit("review1", "a prompt", "glenda")
    cursor = NextCursor(app.sessions.owners, s)
    assert not cursor.ready(0)  # one turn at a time: the prompt waits for this one to end
    app.sessions.owners.report("review1", "await", "cond")
    with within(WAIT, "next to have a prompt"):
        await cursor.wait_ready(0)
    assert cursor.read(0, 100) == b"a prompt" and s.state is State.RUNNING


async def test_wait_blocks_while_the_owner_works_and_answers_await(autojump_clock, running):
    app, s = await conductor(running)
    app.sessions.submit("review1", "go", "glenda")
    wait = WaitCursor(s)
    assert not wait.ready(0)
    async with trio.open_nursery() as nursery:
        async def owner():
            assert take(app, s) == "go"
            await trio.testing.wait_all_tasks_blocked()
            assert not wait.ready(0)  # taken and running: still busy
            app.sessions.owners.answer("review1", "done\n")

        nursery.start_soon(owner)
        with within(WAIT, "wait to answer"):
            await wait.wait_ready(0)
    assert wait.read(0, 100) == b"await\n"


async def test_interrupt_by_anyone_ends_the_owners_turn_in_await_interrupted(autojump_clock, running):
    app, s = await conductor(running)
    app.sessions.owners.report("review1", "running round=3", "cond")
    app.sessions.interrupt("review1")
    await until(lambda: s.state is not State.RUNNING)
    assert s.status_line() == "await interrupted" and "review1 await interrupted\n" in app.events.text()
    assert "--- interrupted 1 at " in s.log_text()
    with pytest.raises(Busy, match="review1 is await interrupted"):
        app.sessions.owners.answer("review1", "too late")


async def test_stop_ends_next_and_refuses_the_owner_until_restart_and_releases_its_beads(autojump_clock, running):
    app, s = await conductor(running)
    bead = app.board.new("Review", "conductor", "d")
    app.board.claim(bead.id, Who("review1", "review1"))
    app.sessions.owners.report("review1", "running round=1", "cond")
    cursor = NextCursor(app.sessions.owners, s)
    assert not cursor.ready(0)
    app.sessions.stop("review1")
    assert cursor.ready(0) and cursor.read(0, 100) == b""  # a blocked owner learns of it: end of file
    assert s.state is State.STOPPED and app.board.get(bead.id).status.value == "pending"
    with pytest.raises(IllegalTransition, match="status running: a session that is stopped cannot take turn-began; "
                                                "from stopped it can take: restart"):
        app.sessions.owners.report("review1", "running round=2", "cond")
    app.sessions.restart("review1")
    await until(lambda: s.state is State.IDLE)
    app.sessions.owners.report("review1", "running round=2", "cond")
    assert s.state is State.RUNNING


@pytest.mark.parametrize("how", ["kill", "remove"])
async def test_kill_and_remove_release_the_beads_it_holds(autojump_clock, running, how):
    app, s = await conductor(running)
    bead = app.board.new("Review", "conductor", "d")
    app.board.claim(bead.id, Who("review1", "review1"))
    app.sessions.stop("review1", kill=True)
    if how == "remove":
        app.board.claim(bead.id, Who("review1", "review1"))  # held again while stopped: the remove lets go of it
        app.sessions.remove("review1")
        assert app.sessions.find("review1") is None
    assert app.board.get(bead.id).status.value == "pending"


async def test_restart_and_clear_take_it_back_to_idle(autojump_clock, running):
    app, s = await conductor(running)
    app.sessions.submit("review1", "one", "glenda")
    take(app, s)
    app.sessions.submit("review1", "kept", "glenda")
    app.sessions.restart("review1")  # a running external session is stopped first; the queue is kept
    await until(lambda: s.state is State.IDLE)
    assert [p.text for p in s.queue] == ["kept"]
    assert take(app, s) == "kept"
    app.sessions.owners.answer("review1", "answer\n")
    app.sessions.clear("review1")
    assert s.status_line() == "idle" and s.out == ""


async def test_a_restarted_server_keeps_each_external_session_as_it_was(tmp_path):
    """No process to lose: idle, await and running stay (a taken prompt is given again), never exited."""
    async with trio.open_nursery() as nursery:
        app = App(backends=backends(), state_dir=tmp_path)
        await nursery.start(app.run)
        owners = app.sessions.owners
        for name in ("idle1", "await1", "run1", "own1"):
            app.sessions.new("external", "/tmp", name=name)
        await until(lambda: all(s.state is State.IDLE for s in app.sessions.all()))
        owners.report("await1", "running", "cond")
        owners.answer("await1", "the answer\n")
        owners.report("await1", "await rounds=2", "cond")
        await app.sessions.submit("run1", "the prompt", "glenda").wait()  # on disk, and queued
        assert take(app, app.sessions.get("run1")) == "the prompt"
        owners.report("run1", "running step=fix", "cond")
        owners.report("own1", "running workflow=review", "cond")
        app.sessions.new("external", "/tmp", name="new1")
        nursery.cancel_scope.cancel()
    with sqlite3.connect(tmp_path / "anvilfs.db") as db:  # as a server killed between its `new` and its runner leaves it
        assert db.execute("UPDATE sessions SET state = 'starting' WHERE name = 'new1' AND state = 'idle'").rowcount == 1
    async with trio.open_nursery() as nursery:
        again = App(backends=backends(), state_dir=tmp_path)
        await nursery.start(again.run)
        get = again.sessions.get
        await until(lambda: get("new1").state is State.IDLE)
        assert get("idle1").status_line() == "idle"
        assert (get("await1").status_line(), get("await1").out) == ("await rounds=2", "the answer\n")
        assert get("run1").status_line() == "running step=fix" and get("own1").status_line() == "running workflow=review"
        assert "run1 kept running: an external session has no process to lose" in again.events.text()
        assert take(again, get("run1")) == "the prompt"  # the taken prompt, found again
        assert not NextCursor(again.sessions.owners, get("own1")).ready(0)  # its own turn: no prompt to give
        again.sessions.owners.answer("run1", "fixed\n")
        again.sessions.owners.answer("own1", "reviewed\n")
        assert get("run1").out == "fixed\n" and get("own1").state is State.AWAIT
        assert "--- prompt 1 from glenda" in get("run1").log_text() and "--- answer 1 " in get("run1").log_text()
        assert not any(s.state is State.EXITED for s in again.sessions.all())
        nursery.cancel_scope.cancel()


async def test_only_an_external_sessions_out_is_writable(autojump_clock, running):
    app, s = await conductor(running)
    app.sessions.new("sim", "/tmp", name="bot1")
    out = lambda name: app.root.lookup(name).lookup("out")  # noqa: E731
    assert (out("review1").mode, out("bot1").mode) == (0o600, 0o400)
    assert app.root.lookup("review1").lookup("next").mode == 0o400
    assert app.root.lookup("bot1").lookup("next") is None
