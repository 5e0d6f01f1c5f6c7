"""Typed domain events: what happened, published at one place, subscribed to by other domains.

Domains never call into each other's internals: sessions publish that a
session ended, beads react (a held bead goes back to pending); beads publish
that a bead completed, convoys react (a convoy whose beads are all done
completes itself). Subscribers run synchronously inside ``publish``, so a
rule that must hold before a write is answered (the convoy completes in the
same step as its last bead) does.

Each event is a small frozen record; ``render`` is the one function that
turns an event into its `events` line (without the time, which the journal
adds).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from .journal import Journal


@dataclass(frozen=True, slots=True)
class SessionEnded:
    """A session's agent is gone for good: killed, stopped, removed, or exited with no restart coming."""

    session: str
    how: str  # "killed" | "stopped" | "removed" | "exited"


@dataclass(frozen=True, slots=True)
class SessionMoved:
    """A session's state changed (or was reported again); mail uses it to know when a notice may go in."""

    session: str
    state: str  # a sessions.State value
    line: str = ""  # its status line, STATE [simulated] [DETAIL...]: what `events` shows


@dataclass(frozen=True, slots=True)
class BudgetSpent:
    """A session's queued prompt did not start: a budget it is held to is spent (it is in `error`, saying so)."""

    session: str
    why: str


@dataclass(frozen=True, slots=True)
class SessionRenamed:
    """A restored session took a new name (its old one is reserved now): what was kept under the old name
    follows it (its mailbox, the beads it holds, the convoys it coordinates)."""

    old: str
    new: str
    why: str


@dataclass(frozen=True, slots=True)
class MailDelivered:
    """A message is in its recipient's inbox, on disk."""

    id: str
    sender: str
    to: str
    type: str
    subject: str
    bead: str = ""


@dataclass(frozen=True, slots=True)
class MailAcked:
    id: str
    by: str


@dataclass(frozen=True, slots=True)
class ApprovalWaiting:
    """An approval request still unanswered after the configured time: announced again, not sent again."""

    id: str
    sender: str
    to: str
    subject: str
    since: str
    bead: str = ""


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """An APPROVAL_RESPONSE answered a bead's request: the bead is approved or rejected (a subscriber may refuse)."""

    bead: str
    approved: bool
    by: str  # the participant that answered (human, a coordinator)
    reason: str = ""
    writer: str = ""  # the 9P user that wrote the answer to by's mail: the beads' rules hold for it too


@dataclass(frozen=True, slots=True)
class BeadChanged:
    """A bead moved (created, claimed, completed ...); ``verb`` says how, ``detail`` adds who or why."""

    bead: str
    verb: str
    status: str
    detail: str = ""
    convoy: str = ""


@dataclass(frozen=True, slots=True)
class ConvoyChanged:
    convoy: str
    verb: str
    status: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class MergeMoved:
    """A merge queue entry moved (queued, merging, merged, conflict, gate-failed, blocked, dropped)."""

    bead: str
    state: str
    branch: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ReworkNeeded:
    """The merge queue could not merge a bead's branch (a conflict, a failing gate): nothing changed in git; the
    bead goes back to `pending` with its branch kept, and its worker gets a REWORK_REQUEST."""

    bead: str
    session: str  # who worked on it
    branch: str
    state: str  # conflict | gate-failed
    detail: str
    files: tuple[str, ...] = ()
    gate: tuple[str, ...] = ()
    output: str = ""


@dataclass(frozen=True, slots=True)
class WorktreeChanged:
    """Something happened to a session's worktree: made, a branch checked out, kept or removed after `remove`."""

    session: str
    what: str


def render(event) -> str | None:
    """The `events` line of an event (TIME is added by the journal), or None if it has none."""
    match event:
        case BeadChanged(bead=bead, verb=verb, status=status, detail=detail):
            return f"bead:{bead} {verb} {status}" + (f" {detail}" if detail else "")
        case ConvoyChanged(convoy=convoy, verb=verb, status=status, detail=detail):
            return f"convoy:{convoy} {verb} {status}" + (f" {detail}" if detail else "")
        case MailDelivered(id=id, sender=sender, to=to, type=kind, subject=subject, bead=bead):
            return f"mail:{id} {kind} from {sender} to {to}" + (f" bead {bead}" if bead else "") + f": {subject}"
        case MailAcked(id=id, by=by):
            return f"mail:{id} acked by {by}"
        case ApprovalWaiting(id=id, sender=sender, to=to, subject=subject, since=since, bead=bead):
            return (f"mail:{id} APPROVAL_REQUEST waiting since {since} from {sender} to {to}"
                    + (f" bead {bead}" if bead else "") + f": {subject}")
        case ApprovalDecided():
            return None  # the bead reports its own approve/reject
        case MergeMoved(bead=bead, state=state, branch=branch, detail=detail):
            return f"merge:{bead} {state} {branch}" + (f" {detail}" if detail else "")
        case ReworkNeeded():
            return None  # the bead's move and the REWORK_REQUEST mail report it
        case WorktreeChanged(session=session, what=what):
            return f"{session} worktree {what}"
        case SessionMoved(session=session, line=line):
            return f"{session} {line}"
        case SessionEnded():
            return None  # the move that ended it was a line already
        case BudgetSpent():
            return None  # its move to error (saying why) and the BUDGET_SPENT mail report it
        case SessionRenamed(old=old, new=new, why=why):
            return f"{new} renamed from {old}: {why}"
    raise TypeError(f"no events line for {type(event).__name__}")


class EventBus:
    """Publishes events to the journal (as lines) and to the subscribers of their type."""

    def __init__(self, journal: Journal | None = None):
        self.journal = journal
        self._subscribers: dict[type, list[Callable]] = defaultdict(list)

    def subscribe(self, kind: type, handler: Callable) -> None:
        self._subscribers[kind].append(handler)

    def publish(self, event) -> None:
        line = render(event)
        if line is not None and self.journal is not None:
            self.journal.append(line)
        for handler in self._subscribers[type(event)]:
            handler(event)
