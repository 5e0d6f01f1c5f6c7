"""One anvilfs server's state: sessions, journals and the tree that shows them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trio

from .backends import SimBackend
from .fs import ROOT_FILES, AgentTree
from .journal import Journal
from .sessions import Backend, RestartPolicy, SessionLimits, Sessions, SessionStore


class App:
    """Everything a server serves, independent of how clients connect."""

    def __init__(
        self,
        *,
        backends: dict[str, Backend] | None = None,
        limits: SessionLimits = SessionLimits(),
        restart: RestartPolicy = RestartPolicy(),
        state_dir: str | Path | None = None,
        roles: Callable[[], dict[str, str]] = dict,
        agent_env: Callable[[str], dict[str, str]] | None = None,
    ):
        self.events = Journal(keep=1000)
        self.errors = Journal(keep=200)
        if backends is None:
            backends = {"sim": SimBackend()}
        self.sessions = Sessions(
            backends, self.events, limits=limits, restart=restart, reserved=ROOT_FILES, roles=roles,
            store=SessionStore(state_dir) if state_dir is not None else None,
            **({"agent_env": agent_env} if agent_env else {}),
        )
        self.tree = AgentTree(self.sessions, self.events, self.errors)

    @property
    def root(self):
        return self.tree.root

    def record_error(self, where: str, text: str) -> None:
        """Keep the full text of an error where a 9P2000.L user can read it."""
        self.errors.append(f"{where}: {text}")
        self.events.append(f"- error {where}: {text}")

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await self.sessions.run(task_status=task_status)
