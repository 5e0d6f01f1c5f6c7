"""Approve and reject from the page: the same files, in the same way, as `anvilfs approve|reject`.

A request that human/approvals lists (by its id, or its bead's) gets an
APPROVAL_RESPONSE from human, written to human/mail and its id read back on
the same fid; anything else is a bead, whose ctl takes `approve` or
`reject REASON` (anvilfs/client/mailcmds.py decides which: answer_plan).
"""

from __future__ import annotations

import json

from ..aioclient import AsyncClient, ServerError
from ..client.mailcmds import ANSWERED, answer_plan, not_an_id, not_answerable, sent_id

REASON_MOST = 1000  # characters: a ctl line is at most 4000 bytes


class BadAnswer(ValueError):
    """What the page sent cannot be an answer; the text says why."""


def checked(wanted: object, reason: object, approved: bool) -> tuple[str, str]:
    """The id and the reason ("approved" for an approval, as the CLI's) from the page's JSON, or BadAnswer.
    The reason goes as it is: quoted on a bead's ctl line, a line break included (answer_plan)."""
    if not isinstance(wanted, str) or not ANSWERED.match(wanted):
        raise BadAnswer(f"id: {not_an_id(str(wanted))}")
    if approved:
        return wanted, "approved"
    if not isinstance(reason, str):
        raise BadAnswer("reason: give the reason as text")
    reason = reason.strip()
    if not reason:
        raise BadAnswer("reject: say why (the requester gets the reason)")
    if len(reason) > REASON_MOST:
        raise BadAnswer(f"reason: at most {REASON_MOST} characters ({len(reason)} given); put more in mail")
    return wanted, reason


async def answer(fs: AsyncClient, wanted: str, approved: bool, reason: str, as_session: bool = False) -> str:
    """Answer WANTED; what was done, as a sentence for the page (as_session: the page attached as a session)."""
    approvals = (await fs.read("human/approvals")).decode(errors="replace")
    kind, what, bead = answer_plan(approvals, wanted, approved, reason, as_session)
    verb = "approved" if approved else "rejected"
    if kind == "mail":
        sent = sent_id((await fs.ctl("human/mail", json.dumps(what))).strip())
        return f"{verb} {wanted}: the response {sent} went to {what['to']}"
    try:
        await fs.write(f"beads/{bead}/ctl", what.encode())
    except ServerError as exc:
        raise not_answerable(wanted, exc) from None
    return f"{verb} {wanted}: written to beads/{bead}/ctl"
