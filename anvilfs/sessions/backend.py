"""The boundary between sessions and the programs that do the work.

A Backend is a named, configured way to run an agent (from configuration,
never from a command line sent over 9P). For each session it makes an
Agent, which the session's runner drives:

    await agent.start()                 # once per (re)start; raise AgentFailed if it cannot
    await agent.turn(prompt, output)    # per prompt; output.write(text) streams the answer
    await agent.wait_exit()             # runs beside the turns: returns when the agent's
                                        # process ended by itself (crash), with the reason
    await agent.stop() / agent.kill()   # when the session is stopped

A turn that fails raises TurnFailed (the session goes to `error` and stays
usable); an agent whose process is gone raises AgentExited (`exited`, then
a restart with backoff). A turn ends early by trio cancellation of `turn()`,
either because a person interrupted it (then ``interrupt()`` is awaited
first) or because the server is shutting down. An agent cleans up in
`finally`/`except trio.Cancelled` and lets the cancellation through; an
agent that can outlive the server (tmux) must leave its program alone on a
plain cancellation and act (type Ctrl-C) only in ``interrupt()``.

The session's role goes before the prompt of a turn that
``begins_conversation``; NothingToResume (a resumed conversation that was
never saved) has the runner run the prompt again at once, beginning one.

Agents that can outlive the server (tmux) return in ``saved()`` what a new
server needs to find them again, and their Backend's ``adopt`` does so.
Backends whose answers do not come from a real model set ``simulated``, and
everything that shows the session says so. A backend that is ``owner_driven``
(external) runs no turns: its session's owner, outside anvilfs, takes the
prompts and ends the turns through the session's files (sessions/owned.py).
One that is ``hook_driven`` (tmux, turn_end = "hook") runs turns its agent's
hooks end: through `status` (agent.hook) or by handing in the answer through
`out` (owned.py), which the agent hears of as the hook's await; an agent that
finds the answer itself gives it to ``output.answer``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Protocol

import trio

from ..usage import Usage


class TurnFailed(Exception):
    """The turn ended without an answer; the text says why."""


class PromptNotSent(TurnFailed):
    """The turn's prompt never reached the agent (a server stopped between taking it and typing it):
    the session queues it again, first."""


class NothingToResume(TurnFailed):
    """The turn resumed a conversation its program had not saved (cut short as it began): the agent's next
    turn begins one (begins_conversation), and the runner runs the prompt again at once as that turn, with
    the session's role if it is still to go. The agent notes it in the transcript before it raises this."""


class AgentFailed(Exception):
    """The agent could not start."""


class AgentExited(Exception):
    """The agent's process ended by itself."""


class Output(Protocol):
    """Where a turn's answer goes, piece by piece (into `stream`, then `out` and `log`)."""

    number: int  # the session's count of this turn, so an agent can tell its turns apart across server restarts
    # dollars the session's budgets leave as the turn begins (None: none is set): a CLI that can cap one run
    # (Claude Code's --max-budget-usd) is given it, so one turn cannot overspend by much
    budget_usd_left: float | None

    def write(self, text: str) -> None: ...

    def note(self, text: str) -> None:
        """Text for the transcript (`log`) only, e.g. a failed command's stderr."""

    def answer(self, text: str) -> None:
        """The whole answer, as the agent itself handed it in (a tmux agent's hook): `out` and `log`
        get it in place of what was written, which stays what `stream` showed. An agent whose CLI's
        structured output is not the answer itself writes a readable account of it (text, tool calls)
        and hands in the answer here."""

    def usage(self, usage: Usage) -> None:
        """What the turn spent, as the CLI reported it (usage/model.py): each report adds to the turn's, so
        an agent reports each request's, or the turn's once. A turn that reports none counts as unpriced
        with no tokens."""


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a backend may know of the session it runs an agent for."""

    name: str
    cwd: str
    role: str = ""
    model: str = ""
    conversation: str = ""  # an id for CLIs that resume a conversation by id
    env: dict[str, str] = field(default_factory=dict)  # ANVILFS_SESSION etc., for the agent's environment
    conductor: bool = False  # made with `conductor`: its agent also gets the tools that drive other sessions
    home: str = ""  # a private directory of the session's own (STATE/agents/NAME) for what its CLI reads; "" none
    worktree: bool = False  # its cwd is a worktree of its own: each bead it claims is a branch (docs/worktrees.md)


class Agent(abc.ABC):
    """One running agent, owned by one session."""

    simulated = False
    pid: int | None = None  # the agent's process, while there is one

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def turn(self, prompt: str, output: Output) -> None: ...

    @property
    def begins_conversation(self) -> bool:
        """Whether the next turn begins a new conversation: only then does the session's role go before its prompt.

        The default says yes, so the role goes with the first turn, and again after a first turn that carried it
        and was not answered (an agent that keeps no trace of such a turn). An agent that knows it resumes a
        conversation that has the role (one whose program kept that turn) says no.
        """
        return True

    async def wait_exit(self) -> str:
        """Return (with the reason) when the agent's process ends by itself.

        Agents with no long-lived process (a command per turn) never return.
        """
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    def hook(self, word: str) -> bool:
        """The agent's own hook wrote `running` or `await` to status.

        Return True if this agent takes hook reports (its turn() waits for
        `await`); the default refuses them.
        """
        return False

    async def follow(self, output: Output) -> None:
        """Follow a turn that was going when this agent was adopted, to its end.

        Agents that cannot (the default) end it at once.
        """

    async def interrupt(self) -> None:
        """A person interrupted the current turn; turn() is cancelled right after."""

    def clear(self) -> None:
        """Forget the conversation: the next turn starts a fresh one."""

    def saved(self) -> dict:
        """What to keep on disk so a restarted server can carry on (TOML-able values)."""
        return {}

    async def stop(self) -> None:
        """Ask the agent to finish; by default the same as kill."""
        await self.kill()

    @abc.abstractmethod
    async def kill(self) -> None: ...


class Backend(abc.ABC):
    """A configured way of running agents."""

    kind: str = ""
    simulated = False
    owner_driven = False  # the session's owner, not a runner, takes its prompts and ends its turns
    hook_driven = False  # its agents' hooks end their turns (status) and may hand in the answer (out)
    gives_tools = False  # its agents get anvilfs's tools (`anvilfs mcp`): the texts sent to them name the tools
    # a process per turn at most (command, sim, openai): a server restart loses none between turns, so its
    # sessions carry on in the state they had (sessions/restore.py)
    per_turn = False
    description = ""

    def __init__(self, name: str):
        self.name = name

    @abc.abstractmethod
    def availability(self) -> str:
        """"ready", or what is missing (e.g. "missing: claude not found on PATH")."""

    @abc.abstractmethod
    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        """A new agent for the session; ``saved`` is what a previous agent's saved() gave."""

    async def adopt(self, session: SessionInfo, saved: dict) -> Agent | None:
        """Find an agent that outlived the previous server; None if it is gone."""
        return None
