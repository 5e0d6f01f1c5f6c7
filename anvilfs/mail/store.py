"""Mail in STATE/anvilfs.db: nothing answered is lost, nothing acknowledged comes back.

    mail       a row per message: its id, its recipient (participant), its box (inbox or done), its JSON
               (the bytes a read of inbox/<id>.json or done/<id>.json gives), and `removed`: when its
               session was removed (the mailbox kept as history), NULL while it is served
    approvals  a row per approval request waiting for its answer, by the request's id; `answer` once it is
               answered (with `kept`: no inbox took the answer, which is kept here)

Every change is one job of the database's writer (storage/database.py): a
send is answered once its row is committed (the server waits for every
change a request made), an acknowledgement is one UPDATE of its box, so a
message is in exactly one box at every instant. What is served comes from
memory (the post office's inboxes) or, for done/, from reads of the
database; an acknowledgement on its way to disk is served from here until
it is committed, so done/ never misses a message inbox/ no longer shows.
"""

from __future__ import annotations

import sqlite3

from ..faults import kill_point
from ..journal import timestamp
from ..storage.database import Commit, Database
from .message import Message

SCHEMA = """
CREATE TABLE IF NOT EXISTS mail (
    id TEXT PRIMARY KEY, participant TEXT NOT NULL, box TEXT NOT NULL CHECK (box IN ('inbox', 'done')),
    json BLOB NOT NULL, removed TEXT);
CREATE INDEX IF NOT EXISTS mail_boxes ON mail (participant, box, id) WHERE removed IS NULL;
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY, request BLOB NOT NULL, answer BLOB, kept INTEGER NOT NULL DEFAULT 0);
"""

_DELIVER = "INSERT INTO mail (id, participant, box, json) VALUES (?, ?, 'inbox', ?)"
_WAIT = "INSERT OR REPLACE INTO approvals (id, request) VALUES (?, ?)"


class MailTables:
    """The mail and approvals tables of the state's database."""

    def __init__(self, db: Database):
        self.db = db
        self._acking: dict[str, tuple[str, bytes]] = {}  # id -> (participant, JSON): acks not yet committed

    # ------------------------------------------------------------ messages

    def deliver(self, message: Message, *, waiting: bool = False) -> Commit:
        """Into its recipient's inbox; with `waiting` (an approval request), recorded as waiting in the same
        transaction, so a request is never delivered without its record nor recorded undelivered."""
        row = (message.id, message.to, message.to_json())
        if not waiting:
            return self.db.execute(_DELIVER, row)

        def both(conn: sqlite3.Connection) -> None:
            conn.execute(_WAIT, (message.id, row[2]))
            conn.execute(_DELIVER, row)
        return self.db.call(both)

    def ack(self, who: str, message: Message) -> Commit:
        self._acking[message.id] = (who, message.to_json())
        commit = self.db.execute("UPDATE mail SET box = 'done' WHERE id = ? AND participant = ? AND box = 'inbox' "
                                 "AND removed IS NULL", (message.id, who))
        commit.then(lambda error: self._acking.pop(message.id, None))
        return commit

    def inboxes(self) -> tuple[dict[str, list[Message]], list[str]]:
        """Every served inbox's messages, oldest first, and a line for each row that cannot be read."""
        found: dict[str, list[Message]] = {}
        problems = []
        for ident, who, raw in self.db.rows("SELECT id, participant, json FROM mail WHERE box = 'inbox' AND "
                                            "removed IS NULL ORDER BY id"):
            try:
                found.setdefault(who, []).append(Message.from_json(raw))
            except Exception as exc:  # a damaged row must not stop the server
                problems.append(f"message {ident} in the inbox of {who} cannot be read ({type(exc).__name__}: "
                                f"{exc}); left as it is in {self.db.path}")
        return found, problems

    def done_sizes(self, who: str) -> list[tuple[str, int]]:
        """The acknowledged messages, oldest first, each with its length: length() of a BLOB reads none of it."""
        sizes = dict(self.db.read("SELECT id, length(json) FROM mail WHERE participant = ? AND box = 'done' AND "
                                  "removed IS NULL", (who,)))
        sizes.update((i, len(data)) for i, (owner, data) in self._acking.items() if owner == who)
        return sorted(sizes.items())

    def done_size(self, who: str, message_id: str) -> int | None:
        raw = self._acked(who, message_id)
        if raw is not None:
            return len(raw)
        found = self.db.read("SELECT length(json) FROM mail WHERE id = ? AND participant = ? AND box = 'done' AND "
                             "removed IS NULL", (message_id, who))
        return found[0][0] if found else None

    def read_done(self, who: str, message_id: str) -> bytes | None:
        raw = self._acked(who, message_id)
        if raw is not None:
            return raw
        found = self.db.read("SELECT json FROM mail WHERE id = ? AND participant = ? AND box = 'done' AND "
                             "removed IS NULL", (message_id, who))
        return bytes(found[0][0]) if found else None

    def _acked(self, who: str, message_id: str) -> bytes | None:
        owner, raw = self._acking.get(message_id, ("", None))
        return raw if owner == who else None

    def highest_id(self) -> int:
        """The largest id of any message kept (answers kept with their requests too): new ids start above it."""
        found = self.db.read("SELECT max(id) FROM mail WHERE id GLOB '[0-9]*' UNION ALL SELECT max(json_extract("
                             "answer, '$.id')) FROM approvals WHERE answer IS NOT NULL")
        return max((int(i) for (i,) in found if i is not None and str(i).isdigit()), default=0)

    def retire(self, who: str) -> str:
        """Keep a removed session's mailbox as history (marked with the time of its removal); says where."""
        for ident in [i for i, (owner, _) in self._acking.items() if owner == who]:
            del self._acking[ident]  # committed before the retire (in order), and no longer served
        stamp = timestamp()
        self.db.execute("UPDATE mail SET removed = ? WHERE participant = ? AND removed IS NULL", (stamp, who))
        return f"{self.db.path} (table mail, participant '{who}', removed '{stamp}')"

    def rename(self, old: str, new: str) -> Commit:
        """The mailbox of a renamed session (its removed ones stay history under the old name)."""
        return self.db.execute("UPDATE mail SET participant = ? WHERE participant = ? AND removed IS NULL", (new, old))

    def kill_point(self, name: str) -> None:
        """A test's kill point between two durable steps: once what was queued before is on disk, before
        anything queued after (a barrier), whichever way the step before reaches the disk."""
        self.db.call(lambda conn: kill_point(name), barrier=True)

    # ------------------------------------------------------------ approval requests

    def wait_for_answer(self, request: Message) -> Commit:
        return self.db.execute(_WAIT, (request.id, request.to_json()))

    def settle(self, request: Message, answer: Message, *, deliver: bool, keep: bool) -> Commit:
        """The request is answered: in one transaction, the answer into its inbox (`deliver`) and the record
        gone, or (`keep`: no inbox took the answer) kept with the answer."""
        def answered(conn: sqlite3.Connection) -> None:
            if deliver:
                conn.execute(_DELIVER, (answer.id, answer.to, answer.to_json()))
            if keep:
                conn.execute("INSERT OR REPLACE INTO approvals (id, request, answer, kept) VALUES (?, ?, ?, 1)",
                             (request.id, request.to_json(), answer.to_json()))
            else:
                conn.execute("DELETE FROM approvals WHERE id = ?", (request.id,))
        return self.db.call(answered)

    def waiting_requests(self) -> tuple[list[tuple[Message, Message | None]], list[str]]:
        """The requests waiting (and an answer, if one was recorded but not yet delivered: an imported state)."""
        found, problems = [], []
        for ident, request, answer in self.db.rows("SELECT id, request, answer FROM approvals WHERE kept = 0 "
                                                   "ORDER BY id"):
            try:
                found.append((Message.from_json(request), Message.from_json(answer) if answer else None))
            except Exception as exc:  # a damaged row must not stop the server
                problems.append(f"approval request {ident} cannot be read ({type(exc).__name__}: {exc}); left as "
                                f"it is in {self.db.path}")
        return found, problems

    def kept(self) -> dict[str, tuple[Message, Message]]:
        """The answered requests whose answer no inbox took, by id, with that answer."""
        return {i: (Message.from_json(r), Message.from_json(a))
                for i, r, a in self.db.read("SELECT id, request, answer FROM approvals WHERE kept = 1")}


class MemoryMailFiles:
    """The same, in memory, for a server without a state directory (tests, demos); nothing to wait for."""

    def __init__(self) -> None:
        self._inbox: dict[str, dict[str, Message]] = {}
        self._done: dict[str, dict[str, Message]] = {}
        self._waiting: dict[str, tuple[Message, Message | None]] = {}
        self._kept: dict[str, tuple[Message, Message]] = {}

    def deliver(self, message: Message, *, waiting: bool = False) -> None:
        if waiting:
            self._waiting[message.id] = (message, None)
        self._inbox.setdefault(message.to, {})[message.id] = message

    def ack(self, who: str, message: Message) -> None:
        found = self._inbox.get(who, {}).pop(message.id, None)
        if found is not None:
            self._done.setdefault(who, {})[message.id] = found

    def inboxes(self) -> tuple[dict[str, list[Message]], list[str]]:
        return {who: sorted(box.values(), key=lambda m: m.id) for who, box in self._inbox.items()}, []

    def done_sizes(self, who: str) -> list[tuple[str, int]]:
        return [(i, len(m.to_json())) for i, m in sorted(self._done.get(who, {}).items())]

    def done_size(self, who: str, message_id: str) -> int | None:
        message = self._done.get(who, {}).get(message_id)
        return len(message.to_json()) if message else None

    def read_done(self, who: str, message_id: str) -> bytes | None:
        message = self._done.get(who, {}).get(message_id)
        return message.to_json() if message else None

    def highest_id(self) -> int:
        return 0

    def retire(self, who: str) -> str:
        self._inbox.pop(who, None)
        self._done.pop(who, None)
        return ""

    def rename(self, old: str, new: str) -> None:
        for boxes in (self._inbox, self._done):
            if old in boxes:
                boxes.setdefault(new, {}).update(boxes.pop(old))

    def kill_point(self, name: str) -> None:
        kill_point(name)

    def wait_for_answer(self, request: Message) -> None:
        self._waiting[request.id] = (request, None)

    def settle(self, request: Message, answer: Message, *, deliver: bool, keep: bool) -> None:
        if deliver:
            self.deliver(answer)
        self._waiting.pop(request.id, None)
        if keep:
            self._kept[request.id] = (request, answer)

    def waiting_requests(self) -> tuple[list[tuple[Message, Message | None]], list[str]]:
        return sorted(self._waiting.values(), key=lambda pair: pair[0].id), []

    def kept(self) -> dict[str, tuple[Message, Message]]:
        return dict(self._kept)
