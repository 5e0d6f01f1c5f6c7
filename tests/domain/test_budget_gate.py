"""A budget's gate on a session's queue, in process (spending.py, sessions/runner.py): the moments between a
write and the runner's next look, which a test through a server cannot hold still."""

from __future__ import annotations

from harness.apps import started, until

from anvilfs.backends import SimBackend
from anvilfs.sessions import State


async def test_a_raised_budget_makes_the_session_busy_at_once(autojump_clock, tmp_path):
    """Raising a budget that held a queued prompt: a `wait` read right after the write must wait for the prompt's
    turn, not answer the stopped state before the runner has looked again."""
    async with started(None, backends={"sim": SimBackend(step_delay=0.01)}) as app:
        session = app.sessions.new("sim", str(tmp_path), name="dev", budget_usd=0.5)
        await until(lambda: session.state is State.IDLE)
        await _submit(app, "dev", "sim:usage=1,1,0.75", "tester")
        await until(lambda: session.state is State.AWAIT and not session.busy)
        await _submit(app, "dev", "next", "tester")
        await until(lambda: session.state is State.ERROR and not session.busy)
        assert session.detail.startswith("budget spent: session dev spent $0.7500 of its $0.5")
        app.spending.set_session_budget("dev", usd=5)
        assert session.busy, "a wait read now would answer `error` while the prompt is about to run"
        await until(lambda: session.state is State.AWAIT and not session.busy)
        assert session.turn_count == 2 and not session.queue


async def test_lowering_a_budget_stops_the_next_turn_and_mails_human_once(autojump_clock, tmp_path):
    async with started(None, backends={"sim": SimBackend(step_delay=0.01)}) as app:
        session = app.sessions.new("sim", str(tmp_path), name="dev")
        await until(lambda: session.state is State.IDLE)
        await _submit(app, "dev", "sim:usage=600,0", "tester")
        await until(lambda: session.state is State.AWAIT and not session.busy)
        app.spending.set_session_budget("dev", tokens=500)
        for prompt in ("one", "two"):
            await _submit(app, "dev", prompt, "tester")
        await until(lambda: session.state is State.ERROR and not session.busy)
        assert [p.text for p in session.queue] == ["one", "two"]
        assert session.detail.startswith("budget spent: session dev spent 600 tokens of its 500")
        spent = [m for m in app.post.inbox("human") if m.type == "BUDGET_SPENT"]
        assert len(spent) == 1 and spent[0].sender == "anvilfs", spent


async def _submit(app, name: str, text: str, sender: str) -> None:
    """A prompt, as a write of `in` sends it (no store here: it joins the queue at once)."""
    later = app.sessions.submit(name, text, sender)
    if later is not None:
        await later.wait()
