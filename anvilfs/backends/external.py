"""The external backend: a session whose owner, outside anvilfs, is the agent.

anvilfs starts nothing for it. The owner (a conductor, a script, a person)
reaches the session through its files: it writes `status` (`running`,
`await`, `error`, each with free detail after the word), takes queued
prompts from `next` and writes each turn's answer to `out`
(sessions/owned.py has the rules). The answers are whatever the owner
writes, not a model's, and not simulated either: the backend marks
nothing.

There is no process to start, watch or lose, so a session of this kind
is idle at once, has no pid, and a restarted server keeps it in the state
it had (``adopt`` always finds it).
"""

from __future__ import annotations

from ..sessions.backend import Agent, Backend, Output, SessionInfo


class ExternalBackend(Backend):
    kind = "external"
    owner_driven = True
    description = "a session whose owner outside anvilfs (a conductor) writes its status and answers and takes its prompts"

    def __init__(self, name: str = "external"):
        super().__init__(name)

    def availability(self) -> str:
        return "ready"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        return ExternalAgent()

    async def adopt(self, session: SessionInfo, saved: dict) -> Agent:
        return ExternalAgent()  # nothing ran here that a server restart could end


class ExternalAgent(Agent):
    """Nothing to run: the session's owner does the work through the files."""

    async def start(self) -> None:
        return None

    async def turn(self, prompt: str, output: Output) -> None:  # pragma: no cover - the runner never calls it
        raise AssertionError("an external session's turns are its owner's: the runner runs none")

    async def kill(self) -> None:
        return None
