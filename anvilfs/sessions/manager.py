"""Creating, finding, restoring and controlling sessions.

``Sessions.run`` owns a nursery; each session gets a runner task there
(runner.py). ``new``, ``submit``, ``interrupt``, ``stop``, ``restart`` and
``clear`` are synchronous, so ctl writes act inline: they only change state
(queued for the database, which the request that made them waits for; a
prompt joins its queue once it is on disk, and ``submit`` returns the Later
its write's answer waits on) and start or cancel tasks. What ``new`` accepts is checked in options.py.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable

import trio

from ..domain_events import BudgetSpent, EventBus, SessionEnded, SessionMoved
from ..errors import AnvilError, Busy, InvalidRequest, LimitExceeded, NotFound, TooMany
from ..journal import Journal, timestamp
from ..waitable import Later
from .backend import Backend, SessionInfo
from .options import RestartPolicy, SessionLimits, check_name, check_new
from .owned import Owners
from .restore import restore_all
from .runner import finish_turn
from .runner_tasks import RunnerTasks
from .session import Definition, Prompt, Session
from .states import ACCEPTS_PROMPTS, Event, State
from .saving import SessionSaver
from .store import SessionStore
from .turns import hear_hook

log = logging.getLogger("anvilfs.sessions")


class Sessions(RunnerTasks):
    """All sessions of one server."""

    def __init__(
        self,
        backends: dict[str, Backend],
        events: Journal,
        *,
        store: SessionStore | None = None,
        limits: SessionLimits = SessionLimits(),
        restart: RestartPolicy = RestartPolicy(),
        reserved: frozenset[str] = frozenset(),
        roles: Callable[[], dict[str, str]] = dict,
        agent_env: Callable[[str], dict[str, str]] = lambda name: {"ANVILFS_SESSION": name},
        agent_home: Callable[[str], str] = lambda name: "",
        publish: Callable[[object], None] | None = None,
        paused: bool = False,
    ):
        self.backends = backends
        self.events = events
        self.store = store
        self.limits = limits
        self.restart_policy = restart
        self.paused = paused  # `serve --paused`: per-turn sessions come back exited, like those whose agent is gone
        self.reserved = reserved  # names taken by the files beside the sessions
        self.roles = roles  # role name -> prompt text, read when needed
        self.agent_env = agent_env
        self.agent_home = agent_home  # a session's private directory for its CLI's files ("" for none)
        # typed domain events (SessionMoved, SessionEnded): other domains subscribe; `events` shows their lines
        self.publish = publish or EventBus(events).publish
        self._sessions: dict[str, Session] = {}
        self._scopes: dict[str, trio.CancelScope] = {}
        self._counter = 0
        self._memory_rows = 0
        # counts the changes of the table and of its sessions' states, and the epoch second of the last: `list`'s stamp
        self.version, self.changed_at = 0, int(time.time())
        self.roster = 0  # counts the sessions made and removed only (not their states): agent/usage's stamp
        self._nursery: trio.Nursery | None = None
        self.saver = SessionSaver(store, events)
        # what the owners of external sessions (and the hooks of hook-driven ones) do through their files
        self.owners = Owners(self.get, self.hook, lambda: self.limits.max_prompt_bytes)
        # may a session's turn begin, as its budgets say (the app's: spending.py); a session's own gate asks it
        self.turn_gate: Callable[[Session], tuple[str, float | None]] = lambda session: ("", None)
        self.ledger = self.saver.ledger  # every turn's usage, summed (usage/ledger.py)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:  # what was queued at the end the database commits as it closes
            self._nursery = nursery
            if self.store is not None:
                self.ledger.load(self.store.db)  # before a turn can end
                await restore_all(self)
                nursery.start_soon(self.saver.run)
            task_status.started()
            await trio.sleep_forever()

    # ------------------------------------------------------------ lookup

    def get(self, name: str) -> Session:
        session = self._sessions.get(name)
        if session is None:
            raise NotFound(f"no such session {name!r}; `list` shows the sessions there are")
        return session

    def find(self, name: str) -> Session | None:
        return self._sessions.get(name)

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    def info(self, definition: Definition) -> SessionInfo:
        env = self.agent_env(definition.name) | ({"ANVILFS_CONDUCTOR": "1"} if definition.conductor else {}) \
            | ({"ANVILFS_WORKTREE": "1"} if definition.worktree else {})
        return SessionInfo(name=definition.name, cwd=definition.cwd, role=definition.role, model=definition.model,
                           conversation=definition.conversation, env=env, conductor=definition.conductor,
                           home=self.agent_home(definition.name), worktree=bool(definition.worktree))

    # ------------------------------------------------------------ creating

    def check_new(self, backend: str, cwd: str, *, role: str = "", model: str = "", ephemeral: bool = False,
                  notify: bool = False, conductor: bool = False, budget_usd: float | None = None,
                  token_budget: int | None = None) -> Backend:
        """Everything `new` checks of its options, with nothing made (a worktree session's, before git works)."""
        return check_new(self.backends, self.roles, backend, cwd, role=role, model=model,
                         ephemeral=ephemeral, notify=notify)

    def new(self, backend: str, cwd: str, *, name: str = "", role: str = "", model: str = "", ephemeral: bool = False,
            notify: bool = False, conductor: bool = False, worktree: str = "", budget_usd: float | None = None,
            token_budget: int | None = None) -> Session:
        chosen = self.check_new(backend, cwd, role=role, model=model, ephemeral=ephemeral, notify=notify)
        name = self.check_name(name) if name else self.next_name()
        if len(self._sessions) >= self.limits.max_sessions:
            raise TooMany(f"write 'remove' to a stopped session's ctl, or raise [limits] max_sessions: "
                                f"the session list is too long at {len(self._sessions)}")
        definition = Definition(name=name, backend=backend, cwd=os.path.normpath(cwd), role=role, model=model,
                                ephemeral=ephemeral, conversation=str(uuid.uuid4()), created=timestamp(), notify=notify,
                                conductor=conductor, worktree=worktree, budget_usd=budget_usd,
                                token_budget=token_budget)
        session = self._make(definition, chosen, saved=None)
        commit = self.saver.add(session)  # the write that made it is answered once it is on disk
        if commit is None:  # no store: a row of memory's own, which keys its usage (usage/ledger.py)
            self._memory_rows += 1
            session.row = self._memory_rows
        if commit is not None:
            commit.then(lambda error: self._refused(session, error))
        marks = " ephemeral" * ephemeral + " notify" * notify + " conductor" * conductor + " simulated" * chosen.simulated
        self.events.append(f"{name} new backend={backend} cwd={definition.cwd}{marks}")
        self._changed(session, saved=True)
        self._start(session)
        return session

    def _refused(self, session: Session, error: OSError | None) -> None:
        """The disk refused a new session's row: it was never made (its write fails with EIO)."""
        if error is None or self._sessions.get(session.name) is not session:
            return
        self.saver.forget(session)
        self._cancel_runner(session.name)
        del self._sessions[session.name]
        self.roster += 1
        self._table_changed()
        session.changes.bump()
        if self._nursery is not None:
            self._nursery.start_soon(session.agent.kill)
        self.events.append(f"{session.name} not made: its save failed ({error.strerror or error})")

    def restored(self, definition: Definition, backend: Backend, saved: dict, row: int) -> Session:
        """A session the store had (restore.py loads the rest, then starts its runner or moves it on)."""
        return self._make(definition, backend, saved, row)

    def _make(self, definition: Definition, backend: Backend, saved: dict | None, row: int = 0) -> Session:
        session = Session(definition, backend, backend.agent(self.info(definition), saved),
                          on_change=self._changed, on_log=self._logged)
        session.row = row
        session.driven = lambda: definition.name in self._scopes  # a runner, or a restart on its way
        session.gate = lambda: self.turn_gate(session)
        session.on_budget_spent = lambda why: self.publish(BudgetSpent(session.name, why))
        self._sessions[definition.name] = session
        self.roster += 1
        self._table_changed()
        return session

    def check_name(self, name: str) -> str:
        return check_name(name, self.reserved, self._sessions, self.store)

    def next_name(self) -> str:
        while True:
            self._counter += 1
            name = f"s{self._counter}"
            if name not in self._sessions and name not in self.reserved and not (self.store and name in self.store.unreadable):
                return name

    # ------------------------------------------------------------ reporting and saving

    def _changed(self, session: Session, *, saved: bool = False) -> None:
        """Report a change in `events`, and mark it for the next write unless it is `saved` already."""
        self._table_changed()
        if not saved:
            self.saver.changed(session)
        line = f"{session.name} {session.status_line()}"
        if line != session.last_event:
            session.last_event = line
            self.publish(SessionMoved(session.name, session.state.value, session.status_line()))  # its events line too

    def _table_changed(self) -> None:
        self.version += 1
        self.changed_at = int(time.time())

    def _logged(self, session: Session, text: str) -> None:
        self.saver.logged(session, text)

    # ------------------------------------------------------------ prompts

    def check_prompt(self, name: str, size: int) -> Session:
        session = self.get(name)
        if size > self.limits.max_prompt_bytes:
            raise LimitExceeded(f"send at most {self.limits.max_prompt_bytes} bytes: the prompt for {name} is too long ({size} bytes)")
        if session.definition.ephemeral and (session.turn_count or session.queue or session.incoming):
            raise Busy(f"start a new session: {name} is ephemeral and has had its one prompt")
        if session.state is State.STOPPED:
            raise Busy(f"write 'restart' to {name}/ctl first: the session is stopped")
        return session

    def submit(self, name: str, text: str, sender: str) -> Later | None:
        """Queue a prompt; it runs when the agent is ready (after a restart, if it is down).

        With a store, the prompt is on its way to disk when this returns: the write that sent it is
        answered when the Later is done, and by then it is in the queue (or refused, if the disk is).
        """
        session = self.check_prompt(name, len(text.encode()))
        prompt = Prompt(text, sender)
        commit = self.saver.commit_prompt(session, prompt)
        if commit is None:
            self._queued(session, prompt)
            return None
        commit.then(lambda error: self._landed(session, prompt, error))
        return Later(commit, lambda exc: AnvilError(  # what matters first: 9P2000 keeps 128 bytes of it
            f"prompt for {name} not queued: its save failed ({exc.strerror or exc}) in {self.store.where}"))

    def _landed(self, session: Session, prompt: Prompt, error: OSError | None) -> None:
        if not session.landed(prompt):
            return  # dropped on its way (a stop): as if it had been queued, then dropped
        if error is None:
            self._queued(session, prompt)
        else:
            session.changes.bump()  # `wait` readers: it is not coming

    def _queued(self, session: Session, prompt: Prompt) -> None:
        session.enqueue(prompt)
        waiting = "" if session.state in ACCEPTS_PROMPTS else f"; session is {session.state.value}: write 'restart' to run it"
        self.events.append(f"{session.name} prompt queued ({len(session.queue)} waiting) from {prompt.sender}{waiting}")

    # ------------------------------------------------------------ lifecycle

    def interrupt(self, name: str) -> None:
        session = self.get(name)
        if session.state is not State.RUNNING:
            raise Busy(f"no turn is running: session {name} is {session.state.value}")
        agent, scope, turn = session.agent, session.turn_scope, session.turn

        async def interrupt_then_cancel() -> None:
            await agent.interrupt()
            if scope is not None:
                scope.cancel()  # the runner's turn: it ends the turn itself
            else:  # a turn no runner drives (typed into the terminal)
                finish_turn(session, turn, Event.INTERRUPTED, "interrupted")

        self._nursery.start_soon(interrupt_then_cancel)

    def stop(self, name: str, *, kill: bool = False) -> None:
        """Stop the agent (or a restart waiting to happen); queued prompts are dropped.

        The stop is saved before it is answered, so a restarted server keeps it; it happened even if
        the save failed (then EIO)."""
        self._stop(name, kill=kill)
        self.publish(SessionEnded(name, "killed" if kill else "stopped"))

    def _stop(self, name: str, *, kill: bool, restarting: bool = False) -> None:
        """Stop the agent; its queued prompts are dropped, unless `restarting` (a restart keeps them, and
        is saved as a restart: never as a stop with an emptied queue, which a crash right after would keep)."""
        session = self.get(name)
        session.restart_pending = False  # a stop cancels a restart on its way
        if session.state is State.STOPPED:
            raise Busy(f"session {name} is already stopped; 'restart' starts it")
        dropped = 0 if restarting else session.drop_queue()
        self._cancel_runner(name)
        session.abort_turn("killed" if kill else "stopped")
        session.move(Event.STOP, f"{dropped} queued prompts dropped" if dropped else "")
        self._nursery.start_soon(session.agent.kill if kill else session.agent.stop)

    def save(self, session: Session) -> None:
        """Save what a write changed that no move of the session did (an agent's saved() data): the write is
        answered once it is on disk, or fails with EIO; then the change stays made, and saved when it can."""
        self.saver.changed(session)

    def remove(self, name: str) -> None:
        """Forget a stopped or exited session; its rows stay in the store as history."""
        session = self.get(name)
        if session.state not in (State.STOPPED, State.EXITED):
            raise Busy(f"session {name} is {session.state.value}: write 'stop' to its ctl first, then 'remove'")
        session.drop_queue()  # a prompt still on its way to disk is dropped with the session
        where = self.saver.remove(session)
        self._cancel_runner(name)  # a restart on its way, for an exited session
        del self._sessions[name]
        self.roster += 1
        self._table_changed()
        session.changes.bump()  # readers blocked on it (wait, stream) see it gone
        kept = f"; its record is kept in {where} as history" if where else ""
        self.events.append(f"{name} removed{kept}")
        self.publish(SessionEnded(name, "removed"))

    def restart(self, name: str) -> None:
        """Start the agent again; prompts still queued are kept and run."""
        session = self.get(name)
        session.restart_pending = False
        if session.definition.ephemeral:
            raise InvalidRequest(f"start a new session: {name} is ephemeral, it does one turn, so a restart is invalid")
        if session.state not in (State.STOPPED, State.EXITED, State.ERROR):
            self._stop(name, kill=True, restarting=True)  # the session lives on: what it holds stays held
        self._cancel_runner(name)
        session.move(Event.RESTART)
        session.agent = session.backend.agent(self.info(session.definition), session.agent.saved())
        self.saver.changed(session)  # with the new agent's saved() data
        self._start(session)

    def _start(self, session: Session) -> None:
        """Run the session's agent. An owner-driven one has nothing to start: it is idle before the write
        that made or restarted it is answered, so its owner can go on at once (a server restart finds it
        idle too, even if this change was not saved yet)."""
        if session.backend.owner_driven:
            session.move(Event.STARTED)
        self.start_runner(session, adopted=session.backend.owner_driven)

    def clear(self, name: str) -> None:
        session = self.get(name)
        if session.state not in (State.IDLE, State.AWAIT, State.ERROR) or name not in self._scopes:
            raise Busy(f"clear works between turns of a started session: {name} is {session.state.value}")
        session.agent.clear()
        session.out = ""
        session.role_pending = bool(session.definition.role)
        session.record(f"--- cleared at {timestamp()}: a fresh conversation begins\n")
        session.move(Event.CLEAR)

    def hook(self, name: str, word: str) -> None:
        """An agent's hook wrote running/await to its status: what it does is turns.py's AGENT rows (a
        writer and a late word are Owners.hook's to refuse first)."""
        session = self.get(name)
        hear_hook(session, word)
        # The hook's write is answered only once what it said is on disk (the agent's saved() notes a
        # turn's await), so a server killed right after answering still knows the turn ended.
        self.save(session)
