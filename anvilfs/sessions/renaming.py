"""Restored sessions whose names are reserved now: each is renamed at start, for good.

An older anvilfs may have saved a session under a name this one keeps for a file of its own beside the
sessions (`merges`, `worktrees`, `usage`: options.SERVER_NAMES, or any of the root's files). It comes back
as the first free NAME-1, NAME-2 ..., with a line in `events` and a record in its transcript that say so,
and what was kept under the old name follows it: its private directory (STATE/agents/NAME) here, its mailbox, the beads it holds and the
convoys it coordinates through SessionRenamed (mail and beads subscribe). The session's own row is renamed
last: a server killed half-way finds the old name again at its next start and does it all again (each
step moves only what the old name still has, and the new name depends only on the rows).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Protocol

from ..domain_events import SessionRenamed
from ..journal import Journal, timestamp
from .options import free_name
from .store import SavedSession, SessionStore


class Sessions(Protocol):
    """What a rename uses of the manager (manager.Sessions)."""

    events: Journal
    store: SessionStore
    reserved: frozenset[str]
    agent_home: Callable[[str], str]
    publish: Callable[[object], None]


async def rename_reserved(sessions: Sessions, saved_sessions: list[SavedSession]) -> None:
    """Give each saved session whose name is reserved a free one, before any of them is restored."""
    taken = {s.definition.name for s in saved_sessions} | sessions.store.unreadable | sessions.reserved
    for saved in saved_sessions:
        old = saved.definition.name
        if old in sessions.reserved:
            new = free_name(old, taken.__contains__)
            taken.add(new)
            await _rename(sessions, saved, new)


async def _rename(sessions: Sessions, saved: SavedSession, new: str) -> None:
    old = saved.definition.name
    why = (f"the name {old} is reserved now for the server's own agent/{old}; its prompts, transcript, mail and "
           f"beads are kept under the new name (an agent or owner that knew the old name must use {new})")
    why += _move_home(sessions.agent_home(old), sessions.agent_home(new))
    sessions.publish(SessionRenamed(old, new, why))  # the `events` line; mail and beads follow it
    # and a record in its transcript, which outlives the start (`events` has only its readers of the moment)
    note = f"--- renamed at {timestamp()} from {old} to {new}: {why}\n"
    sessions.store.log([(sessions.store.line_number(), saved.row, note)])
    saved.log += note
    saved.definition = dataclasses.replace(saved.definition, name=new)
    try:
        await sessions.store.rename(saved.row, saved.definition).wait()
    except OSError as exc:
        sessions.events.append(f"- restore: the new name of {new} (formerly {old}) could not be saved "
                               f"({exc.strerror or exc}); it is served as {new}, and renamed again at the next start")


def _move_home(old: str, new: str) -> str:
    """The session's private directory goes with it; what the notice adds when it cannot."""
    if not old or not os.path.isdir(old):
        return ""  # none (or moved already by a start that was killed before the row was renamed)
    if os.path.lexists(new):
        return f"; its directory {old} stays where it is ({new} exists already: mend by hand)"
    try:
        os.rename(old, new)
        descriptor = os.open(os.path.dirname(new), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(descriptor)  # the rename is on disk before the row that depends on it
        finally:
            os.close(descriptor)
    except OSError as exc:
        return f"; its directory {old} stays where it is ({exc.strerror or exc})"
    return ""
