"""The boundary between sessions and the programs that do the work.

A Backend is a named, configured way to run an agent (from configuration,
never from a command line sent over 9P). For each session it makes an
Agent, which the session's runner drives:

    await agent.start()                 # once; raise AgentFailed if it cannot
    await agent.turn(prompt, output)    # per prompt; output.write(text) streams
    await agent.stop() / agent.kill()   # when the session is stopped

A turn that fails raises TurnFailed (the session goes to `error` and stays
usable); an agent whose process is gone raises AgentExited (`exited`).
Backends whose answers do not come from a real model set ``simulated``, and
everything that shows the session says so.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Protocol


class TurnFailed(Exception):
    """The turn ended without an answer; the text says why."""


class AgentFailed(Exception):
    """The agent could not start."""


class AgentExited(Exception):
    """The agent's process ended by itself."""


class Output(Protocol):
    def write(self, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a backend may know of the session it runs an agent for."""

    name: str
    cwd: str
    role: str
    model: str


class Agent(abc.ABC):
    """One running agent, owned by one session."""

    simulated = False
    pid: int | None = None

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def turn(self, prompt: str, output: Output) -> None: ...

    async def stop(self) -> None:
        """Ask the agent to finish; by default the same as kill."""
        await self.kill()

    @abc.abstractmethod
    async def kill(self) -> None: ...


class Backend(abc.ABC):
    """A configured way of running agents."""

    kind: str = ""
    simulated = False
    accepts_hooks = False  # True where the agent's own hooks write running/await to status

    def __init__(self, name: str):
        self.name = name

    @abc.abstractmethod
    def availability(self) -> str:
        """"ready", or what is missing (e.g. "program claude not found on PATH")."""

    @abc.abstractmethod
    def agent(self, session: SessionInfo) -> Agent: ...
