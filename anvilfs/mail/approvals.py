"""Approval requests: waiting until answered, answered once, announced again while they wait.

An APPROVAL_REQUEST (from an agent, or from anvilfs when a bead needs
approval) waits until an APPROVAL_RESPONSE whose ``re`` names it comes
from its recipient, or until its bead is approved or rejected on the
bead's ctl. A response without ``re`` (as IDEAS.md writes one) answers the
one request its recipient has waiting for its sender, and is refused when
there is not exactly one. The answer goes to the requester's inbox; a
requester with none (anvilfs, for a lease holder's bead; a session removed
since) cannot stop the answer: it is kept with the request's record. A
waiting request is a row of the database (store.py: approvals), written in
the transaction that delivers it; an answer is delivered and its request's
row deleted (or kept with the answer) in one transaction, so it is answered
once, crash or not. (A record with an answer not yet delivered comes only
from a state directory of an earlier anvilfs: load() delivers it, once.)

For a bead's request, the response's subject decides: its first word is
`approved` or `rejected` (the body says why), and the beads' rules decide
whether its writer may (`may_decide`: never the bead's worker, whichever
participant's mail it writes to).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from ..domain_events import ApprovalDecided, ApprovalWaiting, BeadChanged
from ..errors import InvalidRequest, NotFound, NotPermitted
from ..faults import armed
from ..journal import timestamp
from ..waitable import Changes
from .message import Draft, Message, MessageType

if TYPE_CHECKING:
    from .post import PostOffice

VERDICTS = {"approved": True, "approve": True, "rejected": False, "reject": False}


def verdict(draft: Draft | Message) -> tuple[bool, str]:
    """(approved, reason) of a response to a bead's request, from its subject's first word."""
    word = draft.subject.split()[0].rstrip(":,.!").lower() if draft.subject.split() else ""
    if word not in VERDICTS:
        raise InvalidRequest(f"mail answers the approval of bead {draft.bead or '?'}: begin the subject with "
                             "'approved' or 'rejected' (the body says why)")
    reason = draft.body.strip() or draft.subject.partition(" ")[2].strip(" :") or draft.subject
    return VERDICTS[word], reason


class Approvals:
    def __init__(self, post: PostOffice):
        self.post = post
        self._waiting: dict[str, Message] = {}
        self._announced: dict[str, float] = {}  # trio time it was last announced (or began to wait)
        self._deciding: str | None = None  # the bead an APPROVAL_RESPONSE is deciding right now
        self.changes = Changes()
        self.reminder = 3600.0  # seconds a request waits before it is announced again; 0: never
        self.bead_title = lambda bead: ""
        self.coordinator_of = lambda convoy: ""
        # (bead, approved, participant, writer): raises if that answer may not decide the bead (the beads' rules)
        self.may_decide: Callable[[str, bool, str, str], None] = lambda bead, approved, by, writer: None
        post.bus.subscribe(BeadChanged, self._bead_changed)

    def load(self) -> list[str]:
        found, problems = self.post.store.waiting_requests()
        for request, answer in found:
            if answer is None:
                self._waiting[request.id] = request
                if not self.post.holds(request):  # an earlier anvilfs recorded it first, delivered it then
                    self.post.deliver(request)
            else:  # answered, and the server stopped before the answer was delivered or the record cleared
                self._settle(request, answer, redo=True)
        return problems

    def waiting(self, to: str | None = None) -> list[Message]:
        return sorted((m for m in self._waiting.values() if to is None or m.to == to), key=lambda m: m.id)

    # ------------------------------------------------------------ answers in the mail

    def resolve(self, sender: str, draft: Draft) -> Draft:
        """An APPROVAL_RESPONSE without "re" (as IDEAS.md writes one) answers the one request its recipient
        has waiting for `sender`; with none or several it is refused, naming the requests that wait."""
        if draft.type is not MessageType.APPROVAL_RESPONSE or draft.re is not None:
            return draft
        for_sender = self.waiting(sender)
        theirs = [m for m in for_sender if m.sender == draft.to]
        if len(theirs) == 1:
            return draft.model_copy(update={"re": theirs[0].id})
        listed = "; ".join(f"{m.id} from {m.sender}" + (f", bead {m.bead}" if m.bead else "")
                           for m in (theirs or for_sender)[:20])
        if theirs:
            raise InvalidRequest(f"APPROVAL_RESPONSE to {draft.to} without \"re\": {len(theirs)} requests of "
                                 f"{draft.to} wait for {sender} ({listed}); name the one answered: \"re\":\"ID\"")
        raise NotFound(f"APPROVAL_RESPONSE to {draft.to} without \"re\": no approval request of {draft.to} waits "
                       f"for {sender}; " + (f"those waiting for {sender}: {listed}" if listed else "none waits for it"))

    def check(self, sender: str, draft: Draft, writer: str = "") -> Message | None:
        """Whether `draft` may answer the request it names (None if it answers none): written by `writer` to
        `sender`'s mail. A requester need not be a participant (anvilfs, a removed session)."""
        if draft.type is not MessageType.APPROVAL_RESPONSE or draft.re is None:
            return None
        request = self._waiting.get(draft.re)
        if request is None:
            raise NotFound(f"re {draft.re}: no approval request of that id is waiting (answered already, or never "
                           "sent); human/approvals lists those that wait")
        if sender != request.to:
            raise NotPermitted(f"re {draft.re}: the request was sent to {request.to}; only {request.to} answers it")
        if draft.to != request.sender:
            raise InvalidRequest(f"re {draft.re}: the answer goes to the requester: write \"to\":\"{request.sender}\"")
        if request.bead:  # the beads' rules: never the worker (which is the requester, or holds a lease)
            approved, _ = verdict(draft)
            self.may_decide(request.bead, approved, sender, writer)
        elif writer and writer == request.sender:
            raise NotPermitted(f"re {draft.re}: {writer} asked for this approval; someone else answers it "
                               f"(you write to {sender}/mail as {writer})")
        return request

    def answer(self, response: Message, writer: str = "") -> None:
        request = self._waiting[response.re]
        if request.bead and not response.bead:
            response = dataclasses.replace(response, bead=request.bead)  # the answer says which bead it decided
        if request.bead:
            approved, reason = verdict(response)
            self._deciding = request.bead
            try:  # the beads' rules may refuse (the worker cannot approve): then nothing changed
                self.post.bus.publish(ApprovalDecided(request.bead, approved, response.sender, reason, writer))
            finally:
                self._deciding = None
            self._kill_point("approval-answer")  # a crash here is mended at the next start (App.agree_on_approvals)
        self._settle(request, response)

    def _settle(self, request: Message, answer: Message, *, redo: bool = False) -> None:
        post = self.post
        inbox = post.is_participant(answer.to)
        deliver = inbox and not (redo and post.holds(answer))
        saved = post.store.settle(request, answer, deliver=deliver, keep=not inbox)
        if deliver:
            post.arrived(answer, saved)
        if saved is not None:  # refused by the disk: the request still waits there, and so here
            saved.then(lambda error: self.waiting_for(request) if error else None)
        if not inbox and post.bus.journal is not None:
            post.bus.journal.append(f"- mail:{answer.id} APPROVAL_RESPONSE re {request.id} from {answer.sender}: "
                                    f"{answer.to} has no inbox; the answer is kept with the request's record")
        self.forget(request.id)

    def waiting_for(self, request: Message) -> None:
        """A request waits (its record is the post office's to write, with its delivery)."""
        self._waiting[request.id] = request
        self.changes.bump()

    def forget(self, request_id: str) -> None:
        self._waiting.pop(request_id, None)
        self._announced.pop(request_id, None)
        self.changes.bump()

    def _kill_point(self, name: str) -> None:
        """A test's kill point (faults.py) after the bead's change is on disk and before the mail's is."""
        if armed(name):
            self.post.store.kill_point(name)

    # ------------------------------------------------------------ beads

    def _bead_changed(self, event: BeadChanged) -> None:
        if event.verb == "complete" and event.status == "pending_approval":
            self._kill_point("approval-request")  # a crash here is mended at the next start (App.agree_on_approvals)
            self.ask_for_bead(event.bead, event.detail, event.convoy)
        elif event.verb in ("approve", "reject") and event.bead != self._deciding:
            request = next((m for m in self.waiting() if m.bead == event.bead), None)
            if request is not None:
                self._kill_point("approval-answer")
                by, _, reason = event.detail.removeprefix("by ").partition(": ")
                self.answer_for_bead(request, event.verb == "approve", by, reason)

    def ask_for_bead(self, bead: str, worker: str, convoy: str) -> Message:
        """Send the APPROVAL_REQUEST of a bead that waits for approval: from its worker session (else from
        anvilfs), to its convoy's coordinator if it has one that did not do the work, else to human."""
        post = self.post
        sender = worker if post.is_session(worker) else "anvilfs"
        coordinator = self.coordinator_of(convoy) if convoy else ""
        to = coordinator if coordinator and post.is_participant(coordinator) and coordinator != sender else "human"
        title = self.bead_title(bead)
        draft = Draft(to=to, type=MessageType.APPROVAL_REQUEST, subject=f"approve bead {bead}: {title}"[:200],
                      body=f"Bead {bead} ({title}) was completed by {worker or 'nobody'} and needs approval: "
                           f"answer with `anvilfs approve {bead}` or `anvilfs reject {bead} REASON`.",
                      bead=bead)
        request = Message.of(draft, id=post.ids.next(), sender=sender, timestamp=timestamp())
        post.deliver(request)
        return request

    def answer_for_bead(self, request: Message, approved: bool, by: str, reason: str) -> Message:
        """Answer a bead's request with what became of the bead (decided on its ctl, or before a crash)."""
        sender = by if self.post.is_participant(by) else "human"
        subject = f"approved bead {request.bead}" if approved else f"rejected bead {request.bead}: {reason}"[:200]
        draft = Draft(to=request.sender, type=MessageType.APPROVAL_RESPONSE, subject=subject.splitlines()[0],
                      body=reason if not approved else f"approved by {by}", re=request.id, bead=request.bead)
        answer = Message.of(draft, id=self.post.ids.next(), sender=sender, timestamp=timestamp())
        self._settle(request, answer)
        return answer

    # ------------------------------------------------------------ reminders

    async def run(self) -> None:
        """For ever: announce in `events` each request that has waited `reminder` seconds, and again after as long."""
        while True:
            version = self.changes.version
            now = trio.current_time()
            next_at = math.inf
            for request in self.waiting():
                since = self._announced.setdefault(request.id, now)
                if self.reminder > 0 and since + self.reminder <= now:
                    self._announced[request.id] = since = now
                    self.post.bus.publish(ApprovalWaiting(request.id, request.sender, request.to, request.subject,
                                                          request.timestamp, request.bead or ""))
                if self.reminder > 0:
                    next_at = min(next_at, since + self.reminder)
            with trio.move_on_at(next_at):
                await self.changes.wait_changed(version)
