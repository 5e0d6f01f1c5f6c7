"""turns.py's table, walked: every row reached through the real Sessions and its files, and the code consults it.

Each row is (writer, word, phase) -> outcome. The test brings a session of
the writer's kind to the row's phase with real calls (a prompt, a hook's
word, a stop; the states no agent of the harness reaches by itself through
Session.move, along the transition table), writes the word to the real
`status` node (or the answer to `out`) as the writer's uname, and checks
that what happened is the row's outcome.
"""

from __future__ import annotations

import pytest

from anvilfs.backends import ExternalBackend, SimBackend
from anvilfs.sessions import State
from anvilfs.sessions import turns
from anvilfs.sessions.states import Event, IllegalTransition
from anvilfs.sessions.turns import Outcome, Phase, Word, Writer
from harness.apps import until
from harness.pane_agents import ANSWER, PANE, PaneBackend, write_out, write_status

UNAMES = {Writer.OWNER: "conductor", Writer.AGENT: "a", Writer.STRANGER: "glenda", Writer.HOOKLESS: "a"}
BACKENDS = {Writer.OWNER: "external", Writer.AGENT: "pane", Writer.STRANGER: "pane", Writer.HOOKLESS: "sim"}
# the moves from stopped (no runner there any more) that reach a state no agent here reaches by itself
FROM_STOPPED = {Phase.STARTING: [Event.RESTART], Phase.EXITED: [Event.RESTART, Event.EXIT],
                Phase.ERROR: [Event.RESTART, Event.START_FAILED], Phase.STOPPED: []}


def rows() -> list[tuple[Writer, Word, Phase, Outcome]]:
    """Every row, with a word and a phase that reach it where the row holds for any."""
    return [(who, word or Word.RUNNING, where or Phase.IDLE, outcome)
            for (who, word, where), outcome in turns.TURNS.items()]


async def _at(running, who: Writer, where: Phase):
    app = await running(backends={"pane": PaneBackend("pane"), "sim": SimBackend(), "external": ExternalBackend()})
    s = app.sessions.new(BACKENDS[who], "/tmp", name="a")
    await until(lambda: s.state is State.IDLE)
    owner = who is Writer.OWNER
    if where in FROM_STOPPED:
        app.sessions.stop("a")
        for event in FROM_STOPPED[where]:
            s.move(event)
    elif where is Phase.AWAIT:
        write_status(app, "a", UNAMES[who] if owner else "a", "running")  # a turn of its own, or typed in
        write_status(app, "a", UNAMES[who] if owner else "a", "await")
    elif where is Phase.OWN:
        write_status(app, "a", UNAMES[who] if owner else "a", "running")
    elif where in (Phase.RUNNER, Phase.LATE):
        app.sessions.submit("a", "fix it", "glenda")
        await until(lambda: s.state is State.RUNNING and s.turn.chunks)
        if where is Phase.LATE:  # turn 1 said running and was interrupted; turn 2 has said nothing yet
            write_status(app, "a", "a", "running")
            app.sessions.interrupt("a")
            await until(lambda: s.status_line() == "await interrupted")
            app.sessions.submit("a", "and now this", "glenda")
            await until(lambda: s.state is State.RUNNING and s.turn.number == 2 and s.turn.chunks)
    assert app.sessions.owners.phase(s) is where
    return app, s


def _write(app, who: Writer, word: Word) -> None:
    if word is Word.ANSWER and who is Writer.HOOKLESS:  # its `out` is read-only: what a writable one would call
        app.sessions.owners.answer("a", ANSWER, writer=UNAMES[who])
    elif word is Word.ANSWER:
        write_out(app, "a", UNAMES[who], ANSWER)
    else:
        write_status(app, "a", UNAMES[who], "bogus" if word is Word.OTHER else f"{word.value} walk")


@pytest.mark.parametrize(("who", "word", "where", "outcome"), rows(),
                         ids=lambda v: v.value if hasattr(v, "value") else str(v))
async def test_every_row_of_the_table_does_what_it_says(autojump_clock, running, who, word, where, outcome):
    app, s = await _at(running, who, where)
    before = (s.state, s.turn_count, s.turn)
    if outcome in turns.REFUSALS or outcome is Outcome.ILLEGAL:
        with pytest.raises(turns.REFUSALS.get(outcome, IllegalTransition)):
            _write(app, who, word)
        assert (s.state, s.turn_count, s.turn) == before, "a refused word changes nothing"
        return
    _write(app, who, word)
    if outcome is Outcome.BEGIN:
        assert s.state is State.RUNNING and s.turn_count == before[1] + 1
    elif outcome is Outcome.END:
        assert s.state is (State.ERROR if word is Word.ERROR else State.AWAIT) and before[2].done
    elif outcome is Outcome.REPORT:
        assert (s.state, s.turn_count, s.detail) == (before[0], before[1], "walk")
    elif outcome is Outcome.ANSWER:
        assert (s.state, s.out) == (State.AWAIT, ANSWER)
    elif outcome is Outcome.HEARD:
        assert s.state is State.RUNNING and s.turn is before[2] and not s.turn.done and s.agent.heard[-1] == "running"
    else:
        assert outcome is Outcome.AGENT_ENDS
        assert s.agent.heard[-1] == "await"
        await until(lambda: s.state is State.AWAIT)
        assert s.out == PANE and s.turn is before[2], "the runner ended its turn with the pane's text"


def test_the_walk_reaches_every_row():
    assert len(rows()) == len(turns.TURNS)
    assert {phase for _, _, phase, _ in rows()} == set(Phase)
    assert {outcome for *_, outcome in rows()} == set(Outcome)


# ------------------------------------------------------------ the code paths consult the table

@pytest.mark.parametrize(("who", "word", "where", "changed", "match"), [
    (Writer.OWNER, Word.RUNNING, Phase.IDLE, Outcome.BAD_WORD, "'running' is not one of the words"),  # report
    (Writer.AGENT, Word.ANSWER, Phase.RUNNER, Outcome.NO_TURN, "would be no turn's"),  # check_answer
], ids=["owner-running", "agent-answer"])
async def test_a_changed_row_refuses_what_it_took(autojump_clock, running, monkeypatch, who, word, where, changed,
                                                  match):
    monkeypatch.setitem(turns.TURNS, (who, word, where), changed)
    app, s = await _at(running, who, where)
    state = s.state
    with pytest.raises(turns.REFUSALS[changed], match=match):
        _write(app, who, word)
    assert s.state is state


async def test_a_changed_row_changes_what_a_late_await_does(autojump_clock, running, monkeypatch):
    monkeypatch.setitem(turns.TURNS, (Writer.AGENT, Word.AWAIT, Phase.LATE), Outcome.AGENT_ENDS)
    app, s = await _at(running, Writer.AGENT, Phase.LATE)
    _write(app, Writer.AGENT, Word.AWAIT)  # Owners.hook lets it through now: the agent ends turn 2
    await until(lambda: s.state is State.AWAIT)
    assert s.turn.number == 2


async def test_a_changed_row_changes_what_a_typed_running_does(autojump_clock, running, monkeypatch):
    monkeypatch.setitem(turns.TURNS, (Writer.AGENT, Word.RUNNING, Phase.IDLE), Outcome.HEARD)
    app, s = await _at(running, Writer.AGENT, Phase.IDLE)
    app.sessions.hook("a", "running")  # Sessions.hook: heard, and no turn of the terminal's begins
    assert s.state is State.IDLE and s.turn_count == 0 and s.agent.heard == ["running"]
