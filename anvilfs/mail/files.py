"""Mail on disk, through the storage module: nothing answered is lost, nothing acknowledged comes back.

    STATE/mail/<participant>/inbox/<id>.json   delivered, not yet acknowledged
    STATE/mail/<participant>/done/<id>.json    acknowledged (rm of the inbox file)
    STATE/approvals/<id>.json                  approval requests waiting for an answer
    STATE/approvals/answered/<id>.json         answered ones whose answer had no inbox to go to
    STATE/removed/<session>.<TIME>.mail/       the mailbox of a removed session, kept as history

A message is written (fsynced, renamed, directory fsynced) before its write
is answered; an acknowledgement is a rename from inbox/ to done/, so at
every instant a message is in exactly one of them. Nothing but mailboxes is
kept in mail/, so a session may have any name: the waiting requests were
once in mail/approvals/, which a session named `approvals` shared (its mail
unread after a restart, the requests moved away with its removal); a start
moves them out (upgrade_waiting).
"""

from __future__ import annotations

import json
import os

from ..journal import timestamp
from ..storage import PrivateDir
from .message import ID, Message

_BOXES = ("inbox", "done")
_OLD_WAITING = "approvals"  # STATE/mail/approvals/: where waiting requests were kept before (upgrade_waiting)


class MailFiles:
    def __init__(self, state: PrivateDir):
        self.state = state
        self.root = state.subdir("mail")
        self.waiting = state.subdir("approvals")
        self._answered: PrivateDir | None = None  # approvals/answered/, made at its first use
        self._open: dict[tuple[str, str], PrivateDir] = {}
        self.upgrade_waiting()

    def upgrade_waiting(self) -> None:
        """Move the waiting requests an earlier anvilfs kept in mail/approvals/ to approvals/ (a rename each,
        so a crash in between leaves each in one place or the other); what else is there is the mailbox of
        a session named `approvals`, and stays. The directory goes once nothing is left in it."""
        if not os.path.isdir(os.path.join(self.root.path, _OLD_WAITING)):
            return
        old = self.root.subdir(_OLD_WAITING)
        try:
            for name in old.names(".json"):
                old.move(name, self.waiting, name)
        finally:
            old.close()
        self.root.remove_empty_dir(_OLD_WAITING)  # not if a session's inbox/ and done/ are there: its mailbox

    def _dir(self, who: str, box: str) -> PrivateDir:
        found = self._open.get((who, box))
        if found is None:
            found = self._open[(who, box)] = self._dir(who, "").subdir(box) if box else self.root.subdir(who)
        return found

    # ------------------------------------------------------------ messages

    def deliver(self, message: Message) -> None:
        self._dir(message.to, "inbox").write_atomic(f"{message.id}.json", message.to_json())

    def ack(self, who: str, message_id: str) -> None:
        self._dir(who, "inbox").move(f"{message_id}.json", self._dir(who, "done"), f"{message_id}.json")

    def unacked(self, who: str) -> tuple[list[Message], list[str]]:
        """The messages in an inbox, oldest first, and a line for each file that cannot be read."""
        return self._read_all(self._dir(who, "inbox"))

    def done_sizes(self, who: str) -> list[tuple[str, int]]:
        """The acknowledged messages, oldest first, each with the size of its file: a stat, never a read
        (a done message is never written again, and a read gives its stored bytes)."""
        done = self._dir(who, "done")
        return [(n.removesuffix(".json"), done.size(n)) for n in done.names(".json")]

    def done_size(self, who: str, message_id: str) -> int | None:
        """The size of one acknowledged message's file, or None if there is none (a stat, not a read)."""
        done, name = self._dir(who, "done"), f"{message_id}.json"
        return done.size(name) if done.exists(name) else None

    def read_done(self, who: str, message_id: str) -> bytes | None:
        return self._dir(who, "done").read(f"{message_id}.json")

    def mailboxes(self) -> list[str]:
        """The participants with a mailbox on disk."""
        return sorted(n for n in os.listdir(self.root.path) if os.path.isdir(os.path.join(self.root.path, n)))

    def highest_id(self) -> int:
        """The largest id of any message kept: new ids start above it (never reused)."""
        ids = [0]
        for who in self.mailboxes():
            for box in _BOXES:
                ids += [int(n[:16]) for n in self._dir(who, box).names(".json") if ID.match(n[:16])]
        return max(ids)

    def retire(self, who: str) -> str:
        """Move a removed session's mailbox into the state's `removed/` history; returns where."""
        for box in ("", *_BOXES):
            found = self._open.pop((who, box), None)
            if found is not None:
                found.close()
        if not os.path.isdir(os.path.join(self.root.path, who)):
            return ""
        history = self.state.subdir("removed")
        name = f"{who}.{timestamp().replace(':', '')}.mail"
        self.root.move(who, history, name)
        history.close()
        return os.path.join(history.path, name)

    # ------------------------------------------------------------ approval requests

    def wait_for_answer(self, request: Message, answer: Message | None = None) -> None:
        """Record a request as waiting; with `answer`, the answer about to be delivered (kept until it is)."""
        doc = {"request": json.loads(request.to_json())}
        if answer is not None:
            doc["answer"] = json.loads(answer.to_json())
        self.waiting.write_atomic(f"{request.id}.json", json.dumps(doc).encode())

    def answered(self, request_id: str, *, keep: bool = False) -> None:
        """The request's answer is delivered: its record goes. With `keep` (no inbox took the answer), the
        record, which holds the answer, moves to approvals/answered/ instead."""
        if keep:
            if self._answered is None:
                self._answered = self.waiting.subdir("answered")
            self.waiting.move(f"{request_id}.json", self._answered, f"{request_id}.json")
        else:
            self.waiting.remove(f"{request_id}.json")

    def waiting_requests(self) -> tuple[list[tuple[Message, Message | None]], list[str]]:
        found, problems = [], []
        for name in self.waiting.names(".json"):
            try:
                doc = json.loads(self.waiting.read(name))
                answer = doc.get("answer")
                found.append((_message(doc["request"]), _message(answer) if answer else None))
            except Exception as exc:  # a damaged file must not stop the server
                problems.append(f"{self.waiting.path}/{name}: cannot be read ({type(exc).__name__}: {exc}); left as it is")
        return found, problems

    def holds(self, message: Message) -> bool:
        """Whether a message is in its recipient's inbox or done/ already."""
        name = f"{message.id}.json"
        return any(self._dir(message.to, box).read(name) is not None for box in _BOXES)

    def _read_all(self, where: PrivateDir) -> tuple[list[Message], list[str]]:
        messages, problems = [], []
        for name in where.names(".json"):
            try:
                messages.append(Message.from_json(where.read(name)))
            except Exception as exc:
                problems.append(f"{where.path}/{name}: cannot be read ({type(exc).__name__}: {exc}); left as it is")
        return messages, problems


def _message(doc: dict) -> Message:
    return Message.from_json(json.dumps(doc).encode())


class MemoryMailFiles:
    """The same, in memory, for a server without a state directory (tests, demos)."""

    def __init__(self) -> None:
        self._inbox: dict[str, dict[str, Message]] = {}
        self._done: dict[str, dict[str, Message]] = {}
        self._waiting: dict[str, tuple[Message, Message | None]] = {}
        self.kept: dict[str, tuple[Message, Message | None]] = {}  # answered/: answers no inbox took

    def deliver(self, message: Message) -> None:
        self._inbox.setdefault(message.to, {})[message.id] = message

    def ack(self, who: str, message_id: str) -> None:
        message = self._inbox.get(who, {}).pop(message_id, None)
        if message is not None:
            self._done.setdefault(who, {})[message_id] = message

    def unacked(self, who: str) -> tuple[list[Message], list[str]]:
        return sorted(self._inbox.get(who, {}).values(), key=lambda m: m.id), []

    def done_sizes(self, who: str) -> list[tuple[str, int]]:
        return [(i, len(m.to_json())) for i, m in sorted(self._done.get(who, {}).items())]

    def done_size(self, who: str, message_id: str) -> int | None:
        message = self._done.get(who, {}).get(message_id)
        return len(message.to_json()) if message else None

    def read_done(self, who: str, message_id: str) -> bytes | None:
        message = self._done.get(who, {}).get(message_id)
        return message.to_json() if message else None

    def mailboxes(self) -> list[str]:
        return sorted(set(self._inbox) | set(self._done))

    def highest_id(self) -> int:
        return 0

    def retire(self, who: str) -> str:
        self._inbox.pop(who, None)
        self._done.pop(who, None)
        return ""

    def wait_for_answer(self, request: Message, answer: Message | None = None) -> None:
        self._waiting[request.id] = (request, answer)

    def answered(self, request_id: str, *, keep: bool = False) -> None:
        record = self._waiting.pop(request_id, None)
        if keep and record is not None:
            self.kept[request_id] = record

    def waiting_requests(self) -> tuple[list[tuple[Message, Message | None]], list[str]]:
        return sorted(self._waiting.values(), key=lambda pair: pair[0].id), []

    def holds(self, message: Message) -> bool:
        return any(message.id in boxes.get(message.to, {}) for boxes in (self._inbox, self._done))
