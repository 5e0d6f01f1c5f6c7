"""What `new` accepts, and the limits and restart policy a server's sessions live under."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidRequest, NameTaken, NotFound
from ..journal import has_line_breakers, one_line
from .backend import Backend

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # of a session, and of an external session's role
# Names kept for the server's own files beside the sessions, besides those the tree's root has today
# (app.py joins the two): `merges` and `worktrees` (issue 31), `usage` (issue 34). A session an older
# server saved under one of them is renamed when it is restored (renaming.py).
SERVER_NAMES = frozenset({"merges", "worktrees", "usage"})


@dataclass(frozen=True, slots=True)
class SessionLimits:
    max_sessions: int = 256
    max_prompt_bytes: int = 1 << 20


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    enabled: bool = True
    first_delay: float = 1.0
    max_delay: float = 60.0
    max_restarts: int = 5

    def delay(self, attempt: int) -> float:
        return min(self.first_delay * 2 ** attempt, self.max_delay)


def check_new(backends: dict[str, Backend], roles: Callable[[], dict], backend: str, cwd: str, *, role: str,
              model: str, ephemeral: bool, notify: bool) -> Backend:
    """The backend `new` names, once every option is checked; raises the error that says how to do it right."""
    chosen = backends.get(backend)
    if chosen is None:
        known = ", ".join(sorted(backends)) or "none"
        raise NotFound(f"no such backend {backend!r}; known backends: {known}")
    available = chosen.availability()
    if available != "ready":
        raise InvalidRequest(f"backend {backend} is invalid here, it cannot start sessions: {available}")
    for what, value in (("cwd", cwd), ("model", model)):
        if has_line_breakers(value):
            raise InvalidRequest(f"leave control characters out of {what} (list and events show it on one line): "
                                 f"{one_line(value)!r} has one")
    if notify and ephemeral:
        raise InvalidRequest("leave out notify or ephemeral: an ephemeral session does one turn and is never "
                             "prompted by mail (notify is invalid with it)")
    if ephemeral and chosen.owner_driven:
        raise InvalidRequest(f"leave out ephemeral: backend {backend} is external, its owner decides when its "
                             "turns end (ephemeral is invalid with it)")
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise InvalidRequest(f"give cwd as the absolute path of a directory: {cwd!r} is not one")
    if chosen.owner_driven:
        if role and not NAME.match(role):  # a label only: no role prompt goes to an owner
            raise InvalidRequest(f"name the role with 1-64 letters, digits, '.', '_' or '-': {role!r} is invalid")
    elif role and role not in roles():
        known = ", ".join(sorted(roles())) or "none (add ROLE.md files to the roles directory)"
        raise NotFound(f"no such role {role!r}; known roles: {known}")
    return chosen


def check_name(name: str, reserved: frozenset[str], live, store) -> str:
    """`name` if a new session may take it: valid, not the server's, not live (`live`: names in use), not
    one the store could not read (`store`: the SessionStore, None without one)."""
    if not NAME.match(name):
        raise InvalidRequest(f"name a session with 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                             f"digit: {name!r} is invalid")
    if name in reserved:
        raise NameTaken(f"choose another name: {name!r} is reserved for a file beside the sessions (the "
                        f"server's own: {', '.join(sorted(reserved))})")
    if name in live:
        raise NameTaken(f"choose another name: a session named {name!r} already exists")
    if store is not None and name in store.unreadable:
        raise NameTaken(f"choose another name: an earlier session {name!r} in {store.where} could not be "
                        "read (see agent/events from the start); mend or remove its row to use the name")
    return name


def free_name(name: str, taken: Callable[[str], bool]) -> str:
    """The first of NAME-1, NAME-2 ... that is a valid session name and not `taken`."""
    for n in itertools.count(1):
        suffix = f"-{n}"
        candidate = name[:64 - len(suffix)] + suffix  # NAME allows 64 characters
        if NAME.match(candidate) and not taken(candidate):
            return candidate
    raise AssertionError("unreachable")  # pragma: no cover - count() never ends
