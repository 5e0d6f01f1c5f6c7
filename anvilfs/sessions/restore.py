"""Bringing saved sessions back when the server starts.

Agents that can outlive the server (tmux) are adopted where they still run
and carry on in the state they had, and so is every external session (its
owner is outside; there is no process to lose) and every per-turn one
(command, sim, openai: a process per turn at most, none between turns): it
runs its queued prompts. A per-turn turn that was running when the server
stopped lost its process: it ends `error`, and its prompt is not run again
unasked. The rest (a tmux agent that is gone; every per-turn session too when
the server was started `--paused`) come back `exited`, with their queued
prompts kept: `restart` runs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..domain_events import SessionEnded
from ..journal import Journal, timestamp
from .backend import Agent, AgentFailed, Backend, SessionInfo
from .renaming import rename_reserved
from .saving import SessionSaver
from .session import Definition, Session, Turn, prompt_header
from .states import Event, State
from .store import SavedSession, SessionStore


class Sessions(Protocol):
    """What a restore uses of the manager (manager.Sessions): its public side, no more."""

    backends: dict[str, Backend]
    events: Journal
    store: SessionStore
    saver: SessionSaver
    paused: bool
    publish: Callable[[object], None]
    reserved: frozenset[str]
    agent_home: Callable[[str], str]

    def info(self, definition: Definition) -> SessionInfo: ...
    def restored(self, definition: Definition, backend: Backend, saved: dict, row: int) -> Session: ...
    def start_runner(self, session: Session, *, adopted: bool = False) -> None: ...

_ALIVE = (State.STARTING, State.IDLE, State.RUNNING, State.AWAIT, State.ERROR)
LOST = "lost: the server stopped during the turn"


class MissingBackend(Backend):
    """Stands in for a backend that was configured when the session was made, and is not now."""

    kind = "missing"

    def availability(self) -> str:
        return "missing: not in the configuration any more"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        return _NoAgent(self.name)


class _NoAgent(Agent):
    def __init__(self, backend: str):
        self.backend = backend

    async def start(self) -> None:
        raise AgentFailed(f"backend {self.backend!r} is not configured; add it back to the configuration")

    async def turn(self, prompt, output) -> None:  # pragma: no cover - never started
        raise AgentFailed("not started")

    async def kill(self) -> None:
        return None


async def restore_all(sessions: Sessions) -> None:
    """Every live session of the store, as its rows have it (store.py)."""
    saved_sessions, problems = sessions.store.load_all()
    for problem in sessions.store.recovered + problems:  # the import of a state directory of files came first
        sessions.events.append(f"- restore: {problem}")
    await rename_reserved(sessions, saved_sessions)  # an older server's session under a name reserved now
    for saved in saved_sessions:
        await restore_session(sessions, saved)


def _log_turn_prompt(session) -> None:
    """A turn's start is saved before its prompt's transcript record, which may be in a later commit: if the
    server died in between, record it now."""
    turn = session.turn
    if turn.prompt is not None and prompt_header(turn) not in session.log_text():
        session.record(prompt_header(turn))


async def restore_session(sessions: Sessions, saved: SavedSession) -> None:
    definition = saved.definition
    backend = sessions.backends.get(definition.backend) or MissingBackend(definition.backend)
    session = sessions.restored(definition, backend, saved.agent, saved.row)
    state = State(saved.state)
    session.restore(state=state, detail=saved.detail, turn_count=saved.turn_count, restarts=saved.restarts,
                    queue=saved.queue, prompt_seq=saved.prompts, out=saved.out, role_pending=saved.role_pending,
                    log=saved.log)
    sessions.saver.restored(session)
    if state is State.RUNNING:  # the turn the server was in when it stopped
        session.turn = Turn(saved.turn_count, saved.turn_prompt, saved.turn_started or timestamp())
        _log_turn_prompt(session)
    agent = None
    if state in _ALIVE and (saved.agent or backend.owner_driven):
        agent = await backend.adopt(sessions.info(definition), saved.agent)
    if agent is not None:
        session.agent = agent
        if backend.owner_driven:  # its owner is outside: nothing of it ended with the old server
            sessions.events.append(f"{definition.name} kept {state.value}: an external session has no process to lose")
        else:
            sessions.events.append(f"{definition.name} adopted: its agent outlived the server ({state.value})")
        # an external session saved before its runner made it idle starts again (it is idle at once)
        sessions.start_runner(session, adopted=not (backend.owner_driven and state is State.STARTING))
        session.changed()
        return
    if definition.ephemeral and saved.turn_count and state in (State.AWAIT, State.ERROR):
        # its one turn was done and its runner about to stop it: a normal end, nothing it held is released
        session.move(Event.STOP, "ephemeral: one turn done")
    elif state in _ALIVE and backend.per_turn and not sessions.paused:
        _carry_on(sessions, session, state)
    elif state in _ALIVE:
        session.abort_turn(LOST)
        session.move(Event.EXIT, "the server restarted; write 'restart' to its ctl to resume")
        sessions.publish(SessionEnded(definition.name, "exited"))  # no restart is coming by itself
    else:
        sessions.events.append(f"{definition.name} restored {state.value}")
        if state is State.EXITED and saved.restart_pending:  # the crash restart on its way died with the old server
            sessions.publish(SessionEnded(definition.name, "exited"))


def _carry_on(sessions: Sessions, session, state: State) -> None:
    """A per-turn session goes on in the state it had (its agent was made from what it saved): a turn that
    was running lost its process, so it ends `error` (the table's turn-failed), and the queue runs after it."""
    if state is State.RUNNING:
        session.end_turn(Event.TURN_FAILED, LOST)
    sessions.events.append(f"{session.name} kept {session.state.value}: a per-turn agent has no process to lose")
    # one saved `starting` had its start cut short: start it again (a per-turn start only checks the program)
    sessions.start_runner(session, adopted=state is not State.STARTING)
    session.changed()
