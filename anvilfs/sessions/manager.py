"""Creating, finding and running sessions.

``Sessions.run`` owns a nursery; each session gets a runner task there that
starts its agent, feeds it the queued prompts one turn at a time, and moves
the session through the transition table. ``new``, ``submit``, ``stop`` and
``kill`` are synchronous so ctl writes act inline: they only change state
and start or cancel tasks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import trio

from ..errors import Busy, InvalidRequest, LimitExceeded, NameTaken, NotFound
from ..journal import Journal
from .backend import AgentExited, AgentFailed, Backend, SessionInfo, TurnFailed
from .session import Prompt, Session
from .states import ACCEPTS_PROMPTS, Event, State

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


@dataclass(frozen=True, slots=True)
class SessionLimits:
    max_sessions: int = 256
    max_prompt_bytes: int = 1 << 20


class Sessions:
    """All sessions of one server."""

    def __init__(self, backends: dict[str, Backend], events: Journal, *, limits: SessionLimits = SessionLimits(), reserved: frozenset[str] = frozenset()):
        self.backends = backends
        self.events = events
        self.limits = limits
        self.reserved = reserved  # names taken by the files beside the sessions
        self._sessions: dict[str, Session] = {}
        self._scopes: dict[str, trio.CancelScope] = {}
        self._counter = 0
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    # ------------------------------------------------------------ lookup

    def get(self, name: str) -> Session:
        session = self._sessions.get(name)
        if session is None:
            raise NotFound(f"no session {name!r}; `list` shows the sessions there are")
        return session

    def find(self, name: str) -> Session | None:
        return self._sessions.get(name)

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    # ------------------------------------------------------------ creating

    def new(self, backend: str, cwd: str, *, name: str = "", role: str = "", model: str = "", ephemeral: bool = False) -> Session:
        chosen = self.backends.get(backend)
        if chosen is None:
            known = ", ".join(sorted(self.backends)) or "none"
            raise NotFound(f"no backend {backend!r}; known backends: {known}")
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise InvalidRequest(f"cwd {cwd!r} is not an existing directory given by its absolute path")
        name = self._check_name(name) if name else self._next_name()
        if len(self._sessions) >= self.limits.max_sessions:
            raise LimitExceeded(f"already {len(self._sessions)} sessions, the most allowed (max_sessions)")
        info = SessionInfo(name=name, cwd=os.path.normpath(cwd), role=role, model=model)
        session = Session(info, chosen, chosen.agent(info), ephemeral=ephemeral, on_change=self._changed)
        self._sessions[name] = session
        marks = " ephemeral" * ephemeral + " simulated" * chosen.simulated
        self.events.append(f"{name} new backend={backend} cwd={info.cwd}{marks}")
        self._start_runner(session)
        return session

    def _check_name(self, name: str) -> str:
        if not _NAME.match(name):
            raise InvalidRequest(f"bad session name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        if name in self.reserved:
            raise NameTaken(f"{name!r} is the name of a file beside the sessions; choose another")
        if name in self._sessions:
            raise NameTaken(f"a session named {name!r} already exists")
        return name

    def _next_name(self) -> str:
        while True:
            self._counter += 1
            name = f"s{self._counter}"
            if name not in self._sessions and name not in self.reserved:
                return name

    def _changed(self, session: Session, before: State, event: Event) -> None:
        line = f"{session.name} {session.state.value}"
        if session.detail:
            line += f" {session.detail}"
        if session.simulated:
            line += " simulated"
        self.events.append(line)

    # ------------------------------------------------------------ prompts

    def check_prompt(self, name: str, size: int) -> Session:
        session = self.get(name)
        if size > self.limits.max_prompt_bytes:
            raise LimitExceeded(f"prompt for {name} is {size} bytes; at most {self.limits.max_prompt_bytes}")
        if session.state not in ACCEPTS_PROMPTS:
            raise Busy(f"session {name} is {session.state.value}: write 'restart' to its ctl before prompting it")
        return session

    def submit(self, name: str, text: str, sender: str) -> None:
        session = self.check_prompt(name, len(text.encode()))
        session.enqueue(Prompt(text, sender))
        self.events.append(f"{name} prompt queued ({len(session.queue)} waiting) from {sender}")

    # ------------------------------------------------------------ lifecycle

    def stop(self, name: str, *, kill: bool = False) -> None:
        session = self.get(name)
        if session.state in (State.STOPPED, State.EXITED):
            raise Busy(f"session {name} is already {session.state.value}")
        dropped = len(session.queue)
        session.queue.clear()
        scope = self._scopes.pop(name, None)
        if scope is not None:
            scope.cancel()
        session.abort_turn("stopped" if not kill else "killed")
        session.move(Event.STOP, f"{dropped} queued prompts dropped" if dropped else "")
        self._nursery.start_soon(session.agent.kill if kill else session.agent.stop)

    def restart(self, name: str) -> None:
        session = self.get(name)
        if session.ephemeral:
            raise InvalidRequest(f"session {name} is ephemeral: it does one turn and never restarts; start a new one")
        session.move(Event.RESTART)
        session.agent = session.backend.agent(session.info)
        self._start_runner(session)

    def _start_runner(self, session: Session) -> None:
        scope = trio.CancelScope()
        self._scopes[session.name] = scope
        self._nursery.start_soon(self._run_session, session, scope)

    async def _run_session(self, session: Session, scope: trio.CancelScope) -> None:
        # After every await, `scope.cancel_called` means stop/kill already moved
        # the session on while this task was waking up: it must not touch it.
        with scope:
            try:
                await session.agent.start()
            except AgentFailed as exc:
                if not scope.cancel_called:
                    session.move(Event.START_FAILED, f"start failed: {exc}")
                return
            if scope.cancel_called:
                return
            session.move(Event.STARTED)
            while True:
                while not session.queue:
                    await session.changes.wait_changed(session.changes.version)
                if scope.cancel_called:
                    return
                prompt = session.queue.popleft()
                turn = session.begin_turn(prompt)
                try:
                    await session.agent.turn(prompt.text, turn)
                except TurnFailed as exc:
                    if not scope.cancel_called:
                        session.end_turn(Event.TURN_FAILED, str(exc))
                    continue
                except AgentExited as exc:
                    if not scope.cancel_called:
                        session.end_turn(Event.TURN_FAILED, str(exc))
                        session.move(Event.EXIT, str(exc))
                    return
                if scope.cancel_called:
                    return
                session.end_turn(Event.TURN_DONE)
                if session.ephemeral:
                    self._scopes.pop(session.name, None)
                    session.move(Event.STOP, "ephemeral: one turn done")
                    await session.agent.stop()
                    return
