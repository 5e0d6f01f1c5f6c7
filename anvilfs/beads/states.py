"""Bead statuses and every allowed transition (SPEC §6), as one table.

Every change of a bead's status goes through ``advance``; a verb that is
not in the table for the bead's status is refused with what it can take
instead. Readiness (all dependencies completed) is not a status: it is
computed (``ready`` in board.py), so `list` and `ready` cannot disagree.
"""

from __future__ import annotations

import enum

from ..errors import Busy


class Status(enum.StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    PENDING_APPROVAL = "pending_approval"
    COMPLETED = "completed"
    FAILED = "failed"


class Verb(enum.StrEnum):
    CLAIM = "claim"
    UNCLAIM = "unclaim"
    COMPLETE = "complete"  # done; no approval needed
    SUBMIT = "complete-for-approval"  # `complete` of a bead that requires approval
    FAIL = "fail"
    APPROVE = "approve"
    REJECT = "reject"
    REOPEN = "reopen"
    RELEASE = "release"  # the holder's session ended, or its lease ran out
    REWORK = "rework"  # the merge queue could not merge its branch: back to work (worktree sessions)


S, V = Status, Verb

TRANSITIONS: dict[tuple[Status, Verb], Status] = {
    (S.PENDING, V.CLAIM): S.IN_PROGRESS,
    (S.IN_PROGRESS, V.UNCLAIM): S.PENDING,
    (S.IN_PROGRESS, V.RELEASE): S.PENDING,
    (S.IN_PROGRESS, V.COMPLETE): S.COMPLETED,
    (S.IN_PROGRESS, V.SUBMIT): S.PENDING_APPROVAL,
    (S.IN_PROGRESS, V.FAIL): S.FAILED,
    (S.PENDING_APPROVAL, V.APPROVE): S.COMPLETED,
    (S.PENDING_APPROVAL, V.REJECT): S.IN_PROGRESS,  # back to its worker, with the reason in `review`
    (S.COMPLETED, V.REOPEN): S.PENDING,
    (S.COMPLETED, V.REWORK): S.PENDING,  # its branch kept: the next claim resumes it
    (S.FAILED, V.REOPEN): S.PENDING,
}

# Who holds a bead: a claim's holder keeps it through approval and rejection.
HELD = frozenset({S.IN_PROGRESS, S.PENDING_APPROVAL})


class WrongState(Busy):
    """A verb the bead's status does not allow."""


def advance(bead_id: str, status: Status, verb: Verb) -> Status:
    try:
        return TRANSITIONS[(status, verb)]
    except KeyError:
        allowed = sorted({v.value.split("-")[0] for (s, v) in TRANSITIONS if s is status and v not in (V.RELEASE, V.REWORK)})
        raise WrongState(
            f"bead {bead_id} is {status.value}: it cannot take {verb.value.split('-')[0]}; "
            f"from {status.value} it can take: {', '.join(allowed) or 'nothing'}"
        ) from None
