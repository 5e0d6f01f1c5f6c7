"""Interrupt, clear, roles, crash restarts with backoff, stop and remove (a server restart: test_restored_sessions.py)."""

from __future__ import annotations

import pytest
import trio

from anvilfs.app import App
from anvilfs.errors import Busy, InvalidRequest, NotFound
import trio.testing

from anvilfs.sessions import RestartPolicy, State
from harness.apps import until
from harness.stored import FullDatabase, answered


async def test_interrupt_ends_the_turn_in_await_and_the_queue_goes_on(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:hang", "glenda")
    app.sessions.submit("bot1", "next one", "glenda")
    await until(lambda: s.state is State.RUNNING)
    app.sessions.interrupt("bot1")
    await until(lambda: s.turn_count == 2 and not s.busy)
    assert "--- interrupted 1" in s.log_text()
    assert s.state is State.AWAIT and "turn 2" in s.out
    with pytest.raises(Busy, match="no turn is running"):
        app.sessions.interrupt("bot1")


async def test_status_line_says_interrupted(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:hang", "glenda")
    await until(lambda: s.state is State.RUNNING)
    app.sessions.interrupt("bot1")
    await until(lambda: s.state is State.AWAIT)
    assert s.status_line() == "await simulated interrupted"


async def test_clear_starts_afresh_and_repeats_the_role(autojump_clock, running):
    roles = {"reviewer": "You review code. Be terse."}
    app = await running(roles=lambda: roles)
    with pytest.raises(NotFound, match="known roles: reviewer"):
        app.sessions.new("sim", "/tmp", role="writer")
    s = app.sessions.new("sim", "/tmp", name="rev", role="reviewer")
    app.sessions.submit("rev", "look at this", "glenda")
    await until(lambda: s.state is State.AWAIT)
    assert "first line was: You review code. Be terse." in s.out
    app.sessions.submit("rev", "and this", "glenda")
    await until(lambda: s.turn_count == 2 and not s.busy)
    assert "first line was: and this" in s.out  # the role goes only before the first turn
    app.sessions.clear("rev")
    assert s.state is State.IDLE and s.out == ""
    app.sessions.submit("rev", "again", "glenda")
    await until(lambda: s.turn_count == 3 and not s.busy)
    assert "first line was: You review code." in s.out


async def test_the_role_goes_again_when_the_turn_that_carried_it_failed(autojump_clock, running):
    # a command agent begins a new conversation after a failed first turn: it must get the role too
    app = await running(roles=lambda: {"reviewer": "You review code. Be terse."})
    s = app.sessions.new("sim", "/tmp", name="rev", role="reviewer")
    app.sessions.submit("rev", "sim:fail", "glenda")
    await until(lambda: s.state is State.ERROR)
    app.sessions.submit("rev", "look at this", "glenda")
    await until(lambda: s.turn_count == 2 and not s.busy)
    assert "first line was: You review code. Be terse." in s.out
    app.sessions.submit("rev", "and this", "glenda")
    await until(lambda: s.turn_count == 3 and not s.busy)
    assert "first line was: and this" in s.out


async def test_clear_is_refused_while_running(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:hang", "glenda")
    await until(lambda: s.state is State.RUNNING)
    with pytest.raises(Busy, match="between turns"):
        app.sessions.clear("bot1")


async def test_crash_restarts_with_backoff_and_keeps_the_queue(autojump_clock, running):
    app = await running(restart=RestartPolicy(first_delay=1, max_delay=4, max_restarts=5))
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:exit", "glenda")
    app.sessions.submit("bot1", "after the crash", "glenda")
    await until(lambda: s.state is State.EXITED)
    assert s.busy  # a prompt is still queued
    start = trio.current_time()
    await until(lambda: s.state is State.AWAIT)
    assert trio.current_time() - start >= 1  # the first restart waits first_delay
    assert "after the crash" in s.out
    assert "bot1 restarting in 1s (restart 1 of at most 5 in a row)" in app.events.text()
    assert s.restarts == 0  # a good turn resets the count


async def test_backoff_doubles_up_to_the_cap_then_gives_up(autojump_clock, running):
    app = await running(restart=RestartPolicy(first_delay=1, max_delay=4, max_restarts=4))
    s = app.sessions.new("sim", "/tmp", name="bot1")
    for _ in range(6):  # the first start and 4 restarts each take one; one is left
        app.sessions.submit("bot1", "sim:exit", "glenda")
    await until(lambda: "not restarting" in app.events.text())
    events = app.events.text()
    for delay, n in ((1, 1), (2, 2), (4, 3), (4, 4)):
        assert f"bot1 restarting in {delay}s (restart {n} of at most 4 in a row)" in events
    assert s.state is State.EXITED and len(s.queue) == 1
    app.sessions.restart("bot1")  # a person can always restart by hand
    await until(lambda: s.state is State.EXITED and not s.queue)


async def test_ephemeral_crash_is_not_restarted(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="once", ephemeral=True)
    app.sessions.submit("once", "sim:exit", "glenda")
    await until(lambda: s.state is State.EXITED)
    await trio.sleep(120)
    assert s.state is State.EXITED and "restarting" not in app.events.text()


async def test_restart_of_a_live_session_keeps_its_queue(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:hang", "glenda")
    app.sessions.submit("bot1", "kept", "glenda")
    await until(lambda: s.state is State.RUNNING)
    app.sessions.restart("bot1")
    await until(lambda: s.state is State.AWAIT)
    assert "kept" in s.out


async def test_a_disk_that_refuses_writes_fails_the_request_not_the_server(running, tmp_path):
    from anvilfs.errors import AnvilError

    app = await running(state_dir=tmp_path)
    disk = FullDatabase(app.db)  # the save of session boom cannot happen
    with pytest.raises(AnvilError, match="the write not saved: the disk refused it"):
        await answered(lambda: app.sessions.new("sim", "/tmp", name="boom"))
    assert app.sessions.find("boom") is None  # not half made
    disk.full = False
    s = await answered(lambda: app.sessions.new("sim", "/tmp", name="ok"))
    await until(lambda: s.state is State.IDLE)
    disk.full = True
    answer = app.sessions.submit("ok", "hello", "glenda")  # accepted; its write is answered once on disk
    with pytest.raises(AnvilError, match=r"prompt for ok not queued: its save failed \(No space left on device\) in "
                                         r".*/anvilfs.db"):
        await answer.wait()
    assert not s.queue and not s.incoming and not s.busy
    app.sessions.clear("ok")  # a change saved in the background fails too: reported, not fatal
    await until(lambda: "cannot save the state of ok" in app.events.text())
    disk.full = False
    app.sessions.submit("ok", "hello again", "glenda")
    await until(lambda: s.state is State.AWAIT)


async def test_an_ephemeral_session_takes_one_prompt(autojump_clock, running):
    app = await running()
    app.sessions.new("sim", "/tmp", name="once", ephemeral=True)
    app.sessions.submit("once", "one", "glenda")
    with pytest.raises(Busy, match="ephemeral and has had its one prompt"):
        app.sessions.submit("once", "two", "glenda")


async def test_wait_does_not_block_on_a_queue_nothing_will_run(autojump_clock, running):
    from anvilfs.fs.cursors import WaitCursor

    app = await running(restart=RestartPolicy(enabled=False))
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:exit", "glenda")
    app.sessions.submit("bot1", "left in the queue", "glenda")
    await until(lambda: s.state is State.EXITED)
    await trio.testing.wait_all_tasks_blocked()
    assert s.queue and not s.busy
    cursor = WaitCursor(s)
    assert cursor.ready(0) and cursor.read(0, 100) == b"exited\n"
    app.sessions.restart("bot1")  # and the queue is still there to run
    await until(lambda: s.state is State.AWAIT)
    assert "left in the queue" in s.out


async def test_stop_cancels_a_restart_on_its_way(autojump_clock, running):
    app = await running(restart=RestartPolicy(first_delay=5))
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:exit", "glenda")
    await until(lambda: s.state is State.EXITED)
    app.sessions.stop("bot1")
    assert s.state is State.STOPPED
    await trio.sleep(60)
    assert s.state is State.STOPPED  # the restart did not happen


@pytest.mark.parametrize("prompt", ["one", "sim:fail"])
async def test_wait_on_an_ephemeral_session_answers_its_final_state(autojump_clock, running, prompt):
    """SPEC §5: `wait` answers `stopped`, not the `await` (or `error`) its turn passed through."""
    from anvilfs.fs.cursors import WaitCursor

    app = await running()
    s = app.sessions.new("sim", "/tmp", name="once", ephemeral=True)
    cursor = WaitCursor(s)
    app.sessions.submit("once", prompt, "glenda")
    with trio.fail_after(30):
        await cursor.wait_ready(0)
    assert cursor.read(0, 100) == b"stopped\n"
    assert s.state is State.STOPPED


@pytest.mark.parametrize("cwd", ["/tmp/a\nfake sim await - /tmp simulated", "/tmp/\x0b", "/tmp/x\ry", "/tmp/\u2028", "/tmp/\x7f"])
async def test_a_cwd_with_control_characters_is_refused(autojump_clock, running, tmp_path, cwd):
    import os

    app = await running()
    os.makedirs(cwd, exist_ok=True)
    with pytest.raises(InvalidRequest, match="leave control characters out"):
        app.sessions.new("sim", cwd, name="x")
    assert app.sessions.all() == []


async def test_event_lines_cannot_be_forged_by_what_a_client_sends(autojump_clock, running):
    app = await running()
    app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "hi", "glenda\n2026-01-01T00:00:00Z fake stopped")
    await until(lambda: "prompt queued" in app.events.text())
    lines = app.events.text().splitlines()
    assert not any(line.split()[1:2] == ["fake"] for line in lines), lines
    assert any("glenda\\n2026" in line for line in lines)


async def test_remove_forgets_a_stopped_session_and_keeps_its_rows_as_history(tmp_path):
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path)
        await nursery.start(app.run)
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "remember me", "glenda")
        await until(lambda: s.state is State.AWAIT)
        with pytest.raises(Busy, match="write 'stop' to its ctl first, then 'remove'"):
            app.sessions.remove("bot1")
        app.sessions.stop("bot1")
        await answered(lambda: app.sessions.remove("bot1"))
        assert app.sessions.find("bot1") is None
        assert "bot1 removed; its record is kept in" in app.events.text()
        assert app.db.read("SELECT name FROM sessions WHERE removed_at IS NULL") == []
        history = app.db.read("SELECT name, state FROM sessions WHERE removed_at IS NOT NULL")
        assert history == [("bot1", "stopped")]
        assert "remember me" in "".join(t for (t,) in app.db.read("SELECT text FROM session_log WHERE session = ?",
                                                                  (s.row,)))
        again = app.sessions.new("sim", "/tmp", name="bot1")  # the name is free again
        assert again.turn_count == 0
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:  # and a restarted server does not bring the old one back
        second = App(state_dir=tmp_path)
        await nursery.start(second.run)
        assert [x.name for x in second.sessions.all()] == ["bot1"] and "remember me" not in second.sessions.get("bot1").log_text()
        nursery.cancel_scope.cancel()


async def test_removing_an_exited_session_cancels_its_restart(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot1")
    app.sessions.submit("bot1", "sim:exit", "glenda")
    await until(lambda: s.state is State.EXITED)
    app.sessions.remove("bot1")
    await trio.sleep(120)  # past every backoff: nothing comes back
    assert app.sessions.find("bot1") is None and "bot1 starting" not in app.events.text().split("removed")[-1]


async def test_the_session_limit_says_how_to_free_a_slot(autojump_clock, running):
    from anvilfs.errors import TooMany
    from anvilfs.sessions import SessionLimits

    app = await running(limits=SessionLimits(max_sessions=1))
    app.sessions.new("sim", "/tmp", name="a")
    with pytest.raises(TooMany, match="write .remove. to a stopped session.s ctl"):
        app.sessions.new("sim", "/tmp", name="b")
    app.sessions.stop("a")
    app.sessions.remove("a")
    app.sessions.new("sim", "/tmp", name="b")
