"""Sessions whose agents the test holds back: a turn that ends as its session is stopped or restarted, and
hook writes (refused ones change nothing; an accepted one is on disk before it is answered)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from anvilfs.errors import InvalidRequest
from anvilfs.sessions import Agent, Backend, State
from harness.apps import until


class _GateAgent(Agent):
    """Answers each turn once its gate opens: lets a test end a turn and stop the session in one tick."""

    def __init__(self, gate: trio.Event):
        self.gate = gate

    async def start(self) -> None:
        return None

    async def turn(self, prompt, output) -> None:
        await self.gate.wait()
        output.write("answer\n")

    async def kill(self) -> None:
        return None


class _GateBackend(Backend):
    kind = "test"

    def __init__(self):
        super().__init__("gate")
        self.gate = trio.Event()

    def availability(self) -> str:
        return "ready"

    def agent(self, session, saved=None) -> Agent:
        return _GateAgent(self.gate)


@pytest.mark.parametrize("action", ["stop", "restart"])
async def test_a_turn_ending_as_the_session_is_stopped_or_restarted_changes_nothing(autojump_clock, running, action):
    backend = _GateBackend()
    app = await running(backends={"gate": backend})
    s = app.sessions.new("gate", "/tmp", name="g")
    app.sessions.submit("g", "hello", "glenda")
    await until(lambda: s.state is State.RUNNING)
    backend.gate.set()  # the answer is on its way...
    getattr(app.sessions, action)("g")  # ...when the session is moved on, in the same tick
    await trio.testing.wait_all_tasks_blocked()
    assert "internal error" not in app.events.text()
    assert s.out == ""
    assert s.state is (State.STOPPED if action == "stop" else State.IDLE)
    if action == "restart":  # exactly one runner: the next prompt is answered once
        app.sessions.submit("g", "again", "glenda")
        await until(lambda: s.state is State.AWAIT)
        await trio.testing.wait_all_tasks_blocked()
        assert s.turn_count == 2 and s.log_text().count("--- answer") == 1


class _HookAgent(_GateAgent):
    def hook(self, word: str) -> bool:
        return True


async def test_a_refused_hook_write_changes_nothing(autojump_clock, running):
    backend = _GateBackend()
    backend.agent = lambda session, saved=None: _HookAgent(backend.gate)
    app = await running(backends={"gate": backend})
    s = app.sessions.new("gate", "/tmp", name="g")
    await until(lambda: s.state is State.IDLE)
    with pytest.raises(InvalidRequest, match="no turn running|cannot take turn-done"):
        app.sessions.hook("g", "await")
    assert s.out == "" and s.turn_count == 0 and s.log_text() == "" and s.state is State.IDLE
    app.sessions.hook("g", "running")  # a person typed into the agent
    assert s.state is State.RUNNING and s.turn_count == 1
    with pytest.raises(InvalidRequest, match="cannot take turn-began"):
        app.sessions.hook("g", "running")
    assert s.turn_count == 1
    app.sessions.hook("g", "await")
    assert s.state is State.AWAIT


class _SavingHookAgent(Agent):
    """A hook-driven agent: its turn ends when the hook says await; saved() shows what the hook said."""

    def __init__(self):
        self.done = trio.Event()
        self.awaited = 0

    async def start(self) -> None:
        return None

    async def turn(self, prompt, output) -> None:
        self.number = output.number
        await self.done.wait()
        output.write("answer\n")

    def hook(self, word: str) -> bool:
        if word == "await":
            self.awaited = self.number
            self.done.set()
        return True

    def saved(self) -> dict:
        return {"awaited": self.awaited}

    async def kill(self) -> None:
        return None


class _SavingHookBackend(Backend):
    kind = "test-hook"

    def availability(self) -> str:
        return "ready"

    def agent(self, session, saved=None) -> Agent:
        return _SavingHookAgent()


async def test_a_hook_write_is_on_disk_before_it_is_answered(running, tmp_path):
    import json
    import sqlite3

    from harness.stored import answered

    app = await running(backends={"h": _SavingHookBackend("h")}, state_dir=tmp_path)
    s = app.sessions.new("h", "/tmp", name="bot1")
    await until(lambda: s.state is State.IDLE)
    app.sessions.submit("bot1", "go", "glenda")
    await until(lambda: s.state is State.RUNNING)
    await answered(lambda: app.sessions.hook("bot1", "await"))  # returns as the 9P write would be answered
    with sqlite3.connect(tmp_path / "anvilfs.db") as db:
        [(agent,)] = db.execute("SELECT agent FROM sessions WHERE name = 'bot1'").fetchall()
    assert json.loads(agent) == {"awaited": 1}, "the hook's await must be on disk when its write is answered"
