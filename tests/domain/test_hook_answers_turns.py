"""Which turn a hook-driven agent's hook ends, who may write its status, and a save that fails (sessions/owned.py).

A hook's answer (or await) that comes late, after its turn was interrupted
and the next prompt typed, must not end the next turn: once the agent's hook
has said `running`, an answer or await counts only for a turn that has said
`running` itself. The agent is harness/pane_agents.py's stand-in; the test
is its hook, writing the real `status` and `out` nodes as uname `a`.
"""

from __future__ import annotations

import errno

import pytest

from anvilfs.client.hook import NO_TURN, NOT_SAVED
from anvilfs.domain_events import SessionEnded
from anvilfs.errors import AnvilError, Busy, InvalidRequest, NotPermitted
from anvilfs.sessions import State
from anvilfs.tree import Caller
from harness.apps import until
from harness.stored import FullDatabase, answered
from harness.pane_agents import ANSWER, PANE, hooked, write_out, write_status

LATE = "the answer of turn 1, late\n"


async def interrupted_then_next(app, s) -> None:
    """Turn 1 said running and was interrupted; turn 2's prompt is typed, and its hook has said nothing yet."""
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    write_status(app, "a", "a", "running")  # turn 1's UserPromptSubmit hook
    app.sessions.interrupt("a")
    await until(lambda: s.status_line() == "await interrupted")
    app.sessions.submit("a", "and now this", "glenda")
    await until(lambda: s.state is State.RUNNING and s.turn.number == 2 and s.turn.chunks)


async def test_a_late_answer_of_an_interrupted_turn_does_not_end_the_next(running, tmp_path):
    app, s = await hooked(running, state_dir=tmp_path)
    await interrupted_then_next(app, s)
    with pytest.raises(Busy, match="hand in an answer while its turn runs: turn 2 of a has not said running yet") as late:
        write_out(app, "a", "a", LATE)  # turn 1's Stop hook, late
    assert NO_TURN in str(late.value)  # `anvilfs hook` then keeps nothing, and writes no await
    assert s.state is State.RUNNING and s.turn.number == 2 and not s.turn.done
    assert s.out == PANE and LATE not in s.log_text()  # what the interrupted turn left, untouched
    assert s.agent.heard == ["running"]  # the agent's turn 2 was not told to stop following the pane
    write_status(app, "a", "a", "running")  # turn 2's own hooks: running, then its answer
    write_out(app, "a", "a", ANSWER)
    assert (s.state, s.turn.number, s.out) == (State.AWAIT, 2, ANSWER)
    await until(lambda: app.db.read("SELECT out FROM sessions WHERE name = 'a'") == [(ANSWER,)])


async def test_a_late_await_of_an_interrupted_turn_does_not_end_the_next(autojump_clock, running):
    app, s = await hooked(running)
    await interrupted_then_next(app, s)
    with pytest.raises(Busy, match="status await: end a turn once its hook said running: turn 2 of a has not"):
        write_status(app, "a", "a", "await")
    assert s.state is State.RUNNING and s.turn.number == 2 and s.agent.heard == ["running"]
    write_status(app, "a", "a", "running")
    write_status(app, "a", "a", "await")  # turn 2's hook, with no answer to give: the pane's text is it
    await until(lambda: s.state is State.AWAIT)
    assert s.turn.number == 2 and s.out == PANE


async def test_an_open_of_out_begun_before_its_turn_said_running_is_refused_at_its_first_write(autojump_clock,
                                                                                                running):
    app, s = await hooked(running)
    await interrupted_then_next(app, s)
    handle = app.root.lookup("a").lookup("out").open(Caller("a"))  # opening is anyone's, at any time
    with pytest.raises(Busy, match="turn 2 of a has not said running yet"):
        handle.write(0, LATE.encode())
    handle.clunk()  # nothing was collected: nothing is handed in
    assert s.state is State.RUNNING and s.turn.number == 2


async def test_an_agent_whose_hook_never_says_running_still_ends_its_turns(autojump_clock, running):
    """Only an agent that said `running` once is held to it (a hook with only a Stop hook installed)."""
    app, s = await hooked(running)
    for n in (1, 2):
        app.sessions.submit("a", f"prompt {n}", "glenda")
        await until(lambda: s.state is State.RUNNING and s.turn.number == n)
        write_out(app, "a", "a", f"answer {n}\n")
        assert (s.state, s.out) == (State.AWAIT, f"answer {n}\n")


async def test_status_is_written_only_by_the_sessions_own_agent(autojump_clock, running):
    app, s = await hooked(running)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    for word in ("running", "await"):
        with pytest.raises(NotPermitted, match=r"status: only a's own agent reports its turns .*uname a.*glenda is "
                                               "not it"):
            write_status(app, "a", "glenda", word)
    assert s.state is State.RUNNING and s.agent.heard == []
    write_status(app, "a", "a", "running")
    write_status(app, "a", "a", "await")
    await until(lambda: s.state is State.AWAIT)
    app.sessions.new("sim", "/tmp", name="b")  # no hook reports there, whoever writes
    with pytest.raises(InvalidRequest, match="only hook-driven .* write it; b is on sim backend sim"):
        write_status(app, "b", "b", "await")


async def test_an_answer_not_saved_is_refused_with_eio_and_saved_once_the_disk_takes_it(running, tmp_path):
    app, s = await hooked(running, state_dir=tmp_path)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    disk = FullDatabase(app.db)
    with pytest.raises(AnvilError, match=r"^what was written not saved: the disk refused it \(No space left") as refused:
        await answered(lambda: write_out(app, "a", "a", ANSWER), "what was written")
    # not acknowledged: `anvilfs hook` keeps the answer for the next server
    assert refused.value.errno == errno.EIO and NOT_SAVED in str(refused.value)
    assert (s.state, s.out) == (State.AWAIT, ANSWER)  # taken by this server, which saves it when it can
    await until(lambda: "will try again" in app.events.text())
    disk.full = False
    await until(lambda: app.db.read("SELECT out FROM sessions WHERE name = 'a'") == [(ANSWER,)],
                "the answer saved on a retry")


async def test_a_hooks_word_not_saved_is_refused_with_eio(running, tmp_path):
    app, s = await hooked(running, state_dir=tmp_path)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    FullDatabase(app.db)
    with pytest.raises(AnvilError, match=r"^the write not saved: the disk refused it") as refused:
        await answered(lambda: write_status(app, "a", "a", "await"))
    assert refused.value.errno == errno.EIO and NOT_SAVED in str(refused.value)
    await until(lambda: s.state is State.AWAIT)


async def test_a_stop_not_saved_is_refused_with_eio_and_the_agent_still_stops(running, tmp_path):
    app, s = await hooked(running, state_dir=tmp_path)
    ended: list[SessionEnded] = []
    app.bus.subscribe(SessionEnded, ended.append)  # what releases its beads, say
    FullDatabase(app.db)
    with pytest.raises(AnvilError, match=r"^the write not saved: the disk refused it") as refused:
        await answered(lambda: app.sessions.stop("a"))
    assert refused.value.errno == errno.EIO and s.state is State.STOPPED
    assert ended == [SessionEnded("a", "stopped")]
    await until(lambda: s.agent.killed, "the agent stopped all the same")
