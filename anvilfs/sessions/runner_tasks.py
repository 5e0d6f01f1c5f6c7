"""Each session's runner task, and its restart with back-off when the agent ends by itself.

A mixin of Sessions (manager.py), which has the nursery the tasks run in, the scopes that cancel them,
the restart policy, and the rest named below.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from ..domain_events import SessionEnded
from ..journal import Journal
from .options import RestartPolicy
from .runner import run_session
from .saving import SessionSaver
from .session import Session
from .states import Event, State

log = logging.getLogger("anvilfs.sessions")


class RunnerTasks:
    events: Journal
    restart_policy: RestartPolicy
    roles: Callable[[], dict[str, str]]
    publish: Callable[[object], None]
    saver: SessionSaver
    _scopes: dict[str, trio.CancelScope]
    _nursery: trio.Nursery | None
    restart: Callable[[str], None]  # Sessions's: a session's agent started again

    def _cancel_runner(self, name: str) -> None:
        scope = self._scopes.pop(name, None)
        if scope is not None:
            scope.cancel()

    def start_runner(self, session: Session, *, adopted: bool = False) -> None:
        """Run the session's agent in a task of its own (`adopted`: it runs already, outliving an old server)."""
        scope = trio.CancelScope()
        self._scopes[session.name] = scope

        async def guarded() -> None:
            try:
                await run_session(session, scope, adopted=adopted, role_text=self._role_text, on_exit=self._after_exit)
            except Exception as exc:  # a bug in one session must not take the server down
                log.exception("session %s: runner failed", session.name)
                self.events.append(f"{session.name} internal error: {type(exc).__name__}: {exc}; write 'restart' to its ctl")
                if scope.cancel_called:
                    return  # stop/restart moved the session on already: this runner is not its runner
                if self._scopes.get(session.name) is scope:
                    del self._scopes[session.name]
                if session.state not in (State.STOPPED, State.EXITED):
                    session.abort_turn("internal error")
                    session.move(Event.EXIT, f"internal error: {exc}")
            finally:
                if self._scopes.get(session.name) is scope:
                    del self._scopes[session.name]  # no runner any more (a pending restart has its own scope)
                session.changes.bump()  # `busy` may have changed: wake wait readers

        self._nursery.start_soon(guarded)

    def _role_text(self, role: str) -> str:
        return self.roles().get(role, "")

    def _after_exit(self, session: Session, reason: str) -> None:
        """The agent ended by itself: restart it with backoff, unless policy says no."""
        self._scopes.pop(session.name, None)
        policy = self.restart_policy
        if session.definition.ephemeral or not policy.enabled:
            self.publish(SessionEnded(session.name, "exited"))
            return
        if session.restarts >= policy.max_restarts:
            self.events.append(f"{session.name} not restarting: {session.restarts} restarts in a row failed; write 'restart' to its ctl")
            self.publish(SessionEnded(session.name, "exited"))
            return
        delay = policy.delay(session.restarts)
        session.restarts += 1
        session.restart_pending = True  # saved: a server that dies meanwhile leaves it exited, and says so
        self.saver.changed(session)
        self.events.append(f"{session.name} restarting in {delay:g}s (restart {session.restarts} of at most {policy.max_restarts} in a row)")
        scope = trio.CancelScope()
        self._scopes[session.name] = scope

        async def restart_later() -> None:
            with scope:
                await trio.sleep(delay)
                self._scopes.pop(session.name, None)
                self.restart(session.name)

        self._nursery.start_soon(restart_later)
