"""The simulated backend: a deterministic fake agent for demos and tests.

It never pretends to be a model. Every answer starts with "[simulated]", and
the session's status line, `list` and `events` mark it `simulated`.

A prompt may ask for behaviour a test needs:
  sim:fail  the turn fails (session goes to error)
  sim:hang  the turn never ends until the session is stopped
  sim:exit  the agent "process" ends (session goes to exited)
"""

from __future__ import annotations

import itertools

import trio

from ..sessions.backend import Agent, AgentExited, Backend, Output, SessionInfo, TurnFailed


class SimBackend(Backend):
    kind = "sim"
    per_turn = True
    simulated = True

    def __init__(self, name: str = "sim", *, step_delay: float = 0.02):
        super().__init__(name)
        self.step_delay = step_delay

    def availability(self) -> str:
        return "ready"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        return SimAgent(session, self.step_delay)


class SimAgent(Agent):
    simulated = True

    def __init__(self, session: SessionInfo, step_delay: float):
        self.session = session
        self.step_delay = step_delay
        self.turns = itertools.count(1)

    async def start(self) -> None:
        await trio.sleep(self.step_delay)

    async def turn(self, prompt: str, output: Output) -> None:
        number = next(self.turns)
        if "sim:hang" in prompt:
            output.write(f"[simulated] {self.session.name}, turn {number}: hanging until interrupted\n")
            await trio.sleep_forever()
        if "sim:exit" in prompt:
            raise AgentExited("the simulated agent exited because the prompt said sim:exit")
        if "sim:fail" in prompt:
            raise TurnFailed("simulated failure: the prompt said sim:fail")
        first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
        pieces = [
            f"[simulated] {self.session.name}, turn {number}: ",
            "this answer comes from anvilfs's simulated agent, not from a model.\n",
            f"You wrote {len(prompt.encode())} bytes; the first line was: {first_line}\n",
        ]
        for piece in pieces:
            await trio.sleep(self.step_delay)
            output.write(piece)

    async def kill(self) -> None:
        return None
