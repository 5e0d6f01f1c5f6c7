"""agent/usage is drawn from the ledger and the list of sessions, not from their states (fs/usage_files.py):
a look at it after a session only changed its state renders nothing again (with 1,000 sessions, 1,000 lines
at every turn's start, which `anvilfs web` looks at after every burst of events)."""

from __future__ import annotations

from harness.apps import started, until

from anvilfs.backends import SimBackend
from anvilfs.fs import usage_files
from anvilfs.sessions import State


async def test_agent_usage_is_rendered_again_only_when_a_turn_is_counted_or_the_sessions_change(
        autojump_clock, tmp_path, monkeypatch):
    renders = []
    real = usage_files.UsageFiles._all
    monkeypatch.setattr(usage_files.UsageFiles, "_all", lambda self: renders.append(1) or real(self))
    async with started(None, backends={"sim": SimBackend(step_delay=0.01)}) as app:
        node = app.root.lookup("usage")
        session = app.sessions.new("sim", str(tmp_path), name="dev")
        await until(lambda: session.state is State.IDLE)
        first = node.stamp()
        app.sessions.stop("dev")
        app.sessions.restart("dev")
        await until(lambda: session.state is State.IDLE)
        assert node.stamp() == first and len(renders) == 1, "a session's states moved agent/usage's render"
        await _submit(app, "dev", "sim:usage=3,4", "tester")
        await until(lambda: session.state is State.AWAIT)
        assert node.stamp() != first and len(renders) == 2
        assert "dev turns=1 input_tokens=3 output_tokens=4" in node.render()
        app.sessions.new("sim", str(tmp_path), name="other")
        node.stamp()
        assert len(renders) == 3 and "other turns=0" in node.render()


async def _submit(app, name: str, text: str, sender: str) -> None:
    """A prompt, as a write of `in` sends it (no store here: it joins the queue at once)."""
    later = app.sessions.submit(name, text, sender)
    if later is not None:
        await later.wait()


async def test_a_turn_counted_renders_its_sessions_line_of_agent_usage_again_and_no_other(
        autojump_clock, tmp_path, monkeypatch):
    """1,000 sessions' lines rendered at each turn counted held the loop 3.5 ms a change (issue 32)."""
    rendered = []
    real = usage_files._line
    monkeypatch.setattr(usage_files, "_line", lambda name, usage, *words: rendered.append(name) or real(name, usage, *words))
    async with started(None, backends={"sim": SimBackend(step_delay=0.01)}) as app:
        node = app.root.lookup("usage")
        sessions = [app.sessions.new("sim", str(tmp_path), name=name) for name in ("a", "b", "c")]
        await until(lambda: all(s.state is State.IDLE for s in sessions))
        first = node.render()
        assert sorted(rendered) == ["(removed)", "(total)", "a", "b", "c"]
        rendered.clear()
        await _submit(app, "b", "sim:usage=3,4", "tester")
        await until(lambda: sessions[1].state is State.AWAIT)
        text = node.render()
        assert sorted(rendered) == ["(removed)", "(total)", "b"], rendered
        assert text.splitlines()[0] == first.splitlines()[0] and "b turns=1 input_tokens=3 output_tokens=4" in text
        app.sessions.stop("c")
        await until(lambda: sessions[2].state is State.STOPPED)
        app.sessions.remove("c")
        rendered.clear()
        assert [line.split()[0] for line in node.render().splitlines()] == ["a", "b", "(removed)", "(total)"]
        assert sorted(rendered) == ["(removed)", "(total)"], rendered


async def test_the_sessions_without_a_turn_share_one_making_of_their_figures(autojump_clock, tmp_path, monkeypatch):
    """A start's first render of 1,000 sessions' lines formatted each one's figures, most of them ZERO's: 4-5
    ms of the first `ls /` (issue 32). Within a render a total's figures are made once."""
    made = []
    real = usage_files.figures
    monkeypatch.setattr(usage_files, "figures", lambda usage: made.append(usage) or real(usage))
    async with started(None, backends={"sim": SimBackend(step_delay=0.01)}) as app:
        sessions = [app.sessions.new("sim", str(tmp_path), name=f"s{n}") for n in range(5)]
        await until(lambda: all(s.state is State.IDLE for s in sessions))
        text = app.root.lookup("usage").render()
        assert [line.split()[0] for line in text.splitlines()] == ["s0", "s1", "s2", "s3", "s4", "(removed)", "(total)"]
        assert text.splitlines()[0].split()[1:] == text.splitlines()[4].split()[1:]  # the same figures
        assert len(made) == 3, made  # the sessions' one ZERO, then (removed) and (total)


def test_a_session_seen_before_its_row_is_seen_with_it_at_the_next_look():
    """The sorted roster is kept until a session is made or removed; one taken while a session had no row yet
    (0) would name the wrong row's totals for ever, so it is made again."""
    from types import SimpleNamespace  # noqa: PLC0415

    from anvilfs.usage.ledger import Ledger, TurnRecord  # noqa: PLC0415
    from anvilfs.usage.model import Usage  # noqa: PLC0415

    ledger = Ledger()
    ledger.count(TurnRecord(session=7, turn=1, name="dev", at="2026-12-07T00:00:00Z", usage=Usage(input_tokens=5)))
    dev = SimpleNamespace(row=0, name="dev")
    sessions = SimpleNamespace(roster=1, all=lambda: [dev])
    files = usage_files.UsageFiles(SimpleNamespace(ledger=ledger, sessions=sessions))
    assert files._all().startswith("dev turns=0 ")
    dev.row = 7  # saved: the roster did not move
    assert files._all().startswith("dev turns=1 input_tokens=5 ")
