"""The post office: participants, delivery, inboxes, acknowledgements (SPEC §6, no 9P here).

Participants are every session and `human`. ``send`` checks everything
first (recipient, room in its inbox, the rules of approval answers), then
queues the message's row in the database (store.py) and puts it in the
recipient's inbox in memory: the write that sent it is answered once the
row is committed (the server waits for what a request changed), and a row
the disk refused is taken out of the inbox again. Ids are 16 digits that
only grow: the larger of the last id plus one and the time in microseconds,
starting above every id kept on disk, so they sort in acceptance order and
are never reused.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..domain_events import EventBus, MailAcked, MailDelivered, SessionEnded, SessionRenamed
from ..errors import AnvilError, LimitExceeded, NotFound, NotPermitted
from ..journal import timestamp
from ..storage.database import Commit
from .approvals import Approvals
from .message import Draft, Message, MessageType
from .store import MailTables, MemoryMailFiles

HUMAN = "human"


@dataclass(frozen=True, slots=True)
class MailLimits:
    max_inbox: int = 1000  # unacknowledged messages per participant
    max_message_bytes: int = 64 << 10  # the JSON written to `mail`


class InboxFull(LimitExceeded):
    errno = errno.ENOSPC


class IdClock:
    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self.last = 0

    def next(self) -> str:
        self.last = max(self.last + 1, int(self.clock() * 1_000_000))
        return f"{self.last:016d}"


class PostOffice:
    def __init__(self, store: MailTables | MemoryMailFiles, bus: EventBus, *, is_session: Callable[[str], bool],
                 limits: MailLimits = MailLimits(), clock: Callable[[], float] = time.time):
        self.store, self.bus, self.is_session, self.limits = store, bus, is_session, limits
        self.ids = IdClock(clock)
        self._inbox: dict[str, dict[str, Message]] = {}
        self.approvals = Approvals(self)
        self.on_arrival: Callable[[Message], None] = lambda message: None  # notices (notices.py)
        bus.subscribe(SessionEnded, self._session_ended)
        bus.subscribe(SessionRenamed, self._session_renamed)

    def load(self) -> list[str]:
        """Read every inbox and waiting approval; a line for each problem (reported, never fixed silently)."""
        found, problems = self.store.inboxes()
        for who, messages in found.items():
            self._inbox[who] = {m.id: m for m in messages}
        self.ids.last = self.store.highest_id()
        problems += self.approvals.load()
        return problems

    # ------------------------------------------------------------ who

    def is_participant(self, name: str) -> bool:
        return name == HUMAN or self.is_session(name)

    def check_participant(self, name: str, what: str) -> None:
        if not self.is_participant(name):
            raise NotFound(f"{what} {name!r} is no participant: mail goes to `human` or a session `list` shows")

    # ------------------------------------------------------------ sending

    def check_size(self, sender: str, size: int) -> None:
        """What a Twrite can be refused for before the whole message is known."""
        self.check_participant(sender, "sender")
        if size > self.limits.max_message_bytes:
            raise LimitExceeded(f"mail from {sender} is {size} bytes; at most {self.limits.max_message_bytes} "
                                "(max_mail_bytes in [limits]); put long text in a file and send its path")

    def check(self, sender: str, draft: Draft, writer: str = "") -> Draft:
        """Everything that could refuse this message, written by the 9P user `writer` to `sender`'s mail, with
        nothing changed; the draft as it will be sent (an APPROVAL_RESPONSE given the "re" it answers)."""
        self.check_participant(sender, "sender")
        if draft.type is MessageType.REWORK_REQUEST:
            raise NotPermitted("send REVIEW_REQUEST or PROMPT_REQUEST instead: REWORK_REQUEST is sent only by "
                               "anvilfs's merge queue, when it cannot merge a bead's branch")
        if draft.type is MessageType.BUDGET_SPENT:
            raise NotPermitted("send QUERY_REQUEST instead: BUDGET_SPENT is sent only by anvilfs, when a budget "
                               "stops a session's prompts")
        draft = self.approvals.resolve(sender, draft)
        if self.approvals.check(sender, draft, writer) is None or self.is_participant(draft.to):
            self.check_participant(draft.to, "recipient")  # an answer reaches a requester with no inbox too
            held = len(self._inbox.get(draft.to, {}))
            if held >= self.limits.max_inbox:
                raise InboxFull(f"inbox of {draft.to} is full ({held} unacknowledged messages, max_inbox in [limits]): "
                                f"nothing was sent; {draft.to} must rm some of inbox/ first")
        return draft

    def send(self, sender: str, draft: Draft, writer: str = "") -> Message:
        draft = self.check(sender, draft, writer)
        message = Message.of(draft, id=self.ids.next(), sender=sender, timestamp=timestamp())
        if message.type is MessageType.APPROVAL_RESPONSE and message.re:
            self.approvals.answer(message, writer)  # may refuse (the bead's rules): then nothing was sent
        else:
            self.deliver(message)
        return message

    def deliver(self, message: Message) -> None:
        """Put a checked message in its recipient's inbox (its row queued first), and tell whoever listens."""
        request = message.type is MessageType.APPROVAL_REQUEST
        if request:
            self.approvals.waiting_for(message)
        try:
            saved = self.store.deliver(message, waiting=request)  # a request with its record: one transaction
        except OSError as exc:
            raise AnvilError(f"cannot store mail for {message.to}: {exc.strerror or exc}; nothing was sent") from None
        self.arrived(message, saved)

    def arrived(self, message: Message, saved: Commit | None) -> None:
        """A message whose row is queued (`saved`, None in memory) is in its recipient's inbox: tell whoever listens."""
        self._inbox.setdefault(message.to, {})[message.id] = message
        if saved is not None:
            saved.then(lambda error: self._not_saved(message, error) if error else None)
        self.bus.publish(MailDelivered(message.id, message.sender, message.to, message.type.value,
                                       message.subject, message.bead or ""))
        self.on_arrival(message)

    def holds(self, message: Message) -> bool:
        """Whether a message is in its recipient's inbox or done/ already."""
        return self.find(message.to, message.id) is not None or self.done_size(message.to, message.id) is not None

    def _not_saved(self, message: Message, error: OSError) -> None:
        """The disk refused a message's row: it leaves the inbox it was shown in (its write got EIO)."""
        self._inbox.get(message.to, {}).pop(message.id, None)
        if message.type is MessageType.APPROVAL_REQUEST:
            self.approvals.forget(message.id)
        if self.bus.journal is not None:
            self.bus.journal.append(f"- mail:{message.id} to {message.to} not saved ({error.strerror or error}): "
                                    "not delivered")

    # ------------------------------------------------------------ reading and acknowledging

    def inbox(self, who: str) -> list[Message]:
        return sorted(self._inbox.get(who, {}).values(), key=lambda m: m.id)

    def find(self, who: str, message_id: str) -> Message | None:
        return self._inbox.get(who, {}).get(message_id)

    def ack(self, who: str, message_id: str) -> None:
        if self.find(who, message_id) is None:
            raise NotFound(f"no message {message_id} in the inbox of {who}: `ls inbox/` shows those waiting")
        message = self._inbox[who][message_id]
        try:
            saved = self.store.ack(who, message)
        except OSError as exc:
            raise AnvilError(f"cannot acknowledge {message_id}: {exc.strerror or exc}; it stays in inbox/") from None
        del self._inbox[who][message_id]
        if saved is not None:  # if the disk refuses the UPDATE, the message is in inbox/ still: there and here
            saved.then(lambda error: self._inbox.setdefault(who, {}).setdefault(message_id, message) if error else None)
        self.bus.publish(MailAcked(message_id, who))

    def done_sizes(self, who: str) -> list[tuple[str, int]]:
        """The acknowledged messages of `who`, oldest first, with their sizes, none of them read."""
        return self.store.done_sizes(who)

    def done_size(self, who: str, message_id: str) -> int | None:
        return self.store.done_size(who, message_id)

    def read_done(self, who: str, message_id: str) -> bytes | None:
        return self.store.read_done(who, message_id)

    def _session_ended(self, event: SessionEnded) -> None:
        if event.how != "removed":
            return
        self._inbox.pop(event.session, None)
        where = self.store.retire(event.session)
        if where and self.bus.journal is not None:
            self.bus.journal.append(f"- mail of {event.session} kept in {where}")

    def _session_renamed(self, event: SessionRenamed) -> None:
        """A renamed session keeps its mailbox (inbox and done/); the messages say whom they were sent to."""
        box = self._inbox.pop(event.old, None)
        if box:
            self._inbox.setdefault(event.new, {}).update(box)
        self.store.rename(event.old, event.new)
