"""Mail as files (SPEC §3, §4, §6): `mail`, `inbox/`, `done/` of every participant, and `human/`.

    <participant>/mail      rw  one JSON message per open, sent from <participant>;
                                a read after the writes sends it and answers its id or why not
    <participant>/inbox/    0700  one <id>.json per unacknowledged message; rm acknowledges
    <participant>/done/     0500  acknowledged messages, <id>.json
    human/approvals         r   one line per waiting approval request: id from bead subject
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import AnvilError, InvalidRequest, NotPermitted
from ..mail import HUMAN, Message, PostOffice, parse_draft
from ..tree import Caller, CollectFile, Directory, Node, TextFile
from ..tree.files import _CollectHandle
from .stamps import follows, now

Report = Callable[[str, str], None]  # (where, text): the full text of an error, for `errors`


def mailbox_entries(post: PostOffice, owner: str, report: Report) -> list[Node]:
    """The files every participant has: mail, inbox/, done/."""
    return [MailFile(post, owner, report), _inbox(post, owner), _done(post, owner)]


def human_directory(post: PostOffice, report: Report) -> Directory:
    def approvals() -> str:
        return "".join(f"{m.id} {m.sender} {m.bead or '-'} {m.subject}\n" for m in post.approvals.waiting(HUMAN))

    # moves at each change of the requests waiting; Approvals keeps no time: its mtime is the second of the look
    # that found it changed, or the server's start while none came or went since the start's load
    changes = post.approvals.changes
    waiting = TextFile("approvals", "human/approvals", approvals)
    follows(waiting, lambda: changes.version, lambda: now() if changes.version else waiting.mtime)
    return Directory(HUMAN, HUMAN, mailbox_entries(post, HUMAN, report) + [waiting])


class MailFile(CollectFile):
    __slots__ = ("post", "owner", "report")

    def __init__(self, post: PostOffice, owner: str, report: Report):
        super().__init__("mail", f"mail/{owner}/mail", check=lambda size, caller: post.check_size(owner, size),
                         submit=self._send, abandoned=self._abandoned, render=lambda: "")
        self.post, self.owner, self.report = post, owner, report

    def open(self, caller: Caller) -> _MailHandle:
        # A client attached as a session (its agent, through `anvilfs mcp` or the shell path) sends as that
        # session only: else an agent could answer its own approval request as human, or write as a peer.
        if caller.uname != self.owner and self.post.is_session(caller.uname):
            raise NotPermitted(f"{self.owner}/mail: you are attached as session {caller.uname}, which sends mail "
                               f"from agent/{caller.uname}/mail only")
        self.check(0, caller)
        return _MailHandle(self, caller)

    def _send(self, data: bytes, caller: Caller) -> str:
        return self.post.send(self.owner, parse_draft(data)).id

    def check_whole(self, data: bytes) -> None:
        """A write that completes a JSON document is checked as a message at that Twrite."""
        if not data.rstrip().endswith(b"}"):
            return
        try:
            draft = parse_draft(data)
        except InvalidRequest as exc:
            if "not JSON" in exc.message:
                return  # maybe only a '}' inside the body: wait for the rest
            raise
        self.post.check(self.owner, draft)

    def _abandoned(self, data: bytes, caller: Caller) -> None:
        self.report(f"{self.owner}/mail", f"a message of {len(data)} bytes from {caller.uname} was not sent: "
                                          "the connection closed before the file was closed")


class _MailHandle(_CollectHandle):
    """Collects one message; the first read after writes sends it (read-back), else the clunk does."""

    def __init__(self, file: MailFile, caller: Caller):
        super().__init__(file, caller)
        self._mail = file
        self._answer: bytes | None = None  # once sent (or refused): what a read answers
        self._pos = 0

    def write(self, offset: int, data: bytes) -> int:
        if self._answer is not None:
            raise InvalidRequest("mail: this open sent its message already; open mail again to send another")
        self._mail.check_whole(bytes(self._buf) + self._new_part(offset, data))
        return super().write(offset, data)

    def read(self, offset: int, count: int, budget=None) -> bytes:
        if self._answer is None:
            if not self._buf:
                return b""  # `9p rdwr` reads before it writes
            self._send()
        elif offset == 0:
            self._pos = 0
        data = self._answer[self._pos:self._pos + count]
        self._pos += len(data)
        return data

    def _send(self) -> None:
        try:
            self._answer = (self._mail._send(bytes(self._buf), self._caller) + "\n").encode()
        except AnvilError as exc:
            self._answer = f"error: {exc.message}\n".encode()
            self._mail.report(f"{self._mail.owner}/mail", exc.message)
        self._buf.clear()

    def clunk(self) -> None:
        if self._answer is None and self._buf:
            data = bytes(self._buf)
            self._buf.clear()
            self._mail._send(data, self._caller)  # a refusal is recorded in `errors` by the server

    def abandon(self) -> None:
        if self._answer is None:
            super().abandon()


def _message_file(message: Message, key: str) -> TextFile:
    text = message.to_json().decode("utf-8")
    return TextFile(f"{message.id}.json", key, lambda: text)


def _inbox(post: PostOffice, owner: str) -> Directory:
    built: dict[str, TextFile] = {}

    def node(message: Message) -> TextFile:
        found = built.get(message.id)
        if found is None:
            found = built[message.id] = _message_file(message, f"mail/{owner}/inbox/{message.id}")
        return found

    def children() -> list[Node]:
        messages = post.inbox(owner)
        if len(built) > len(messages):  # some were acknowledged: forget their files
            kept = {m.id for m in messages}
            for gone in [i for i in built if i not in kept]:
                del built[gone]
        return [node(m) for m in messages]

    def find(name: str) -> Node | None:
        message = post.find(owner, name.removesuffix(".json")) if name.endswith(".json") else None
        return node(message) if message is not None else None

    def remove(entry: Node, caller: Caller) -> None:
        message_id = entry.name.removesuffix(".json")
        if post.find(owner, message_id) is None:
            raise NotPermitted(f"{entry.name} is not in the inbox of {owner} (acknowledged already?)")
        post.ack(owner, message_id)
        built.pop(message_id, None)

    return Directory("inbox", f"mail/{owner}/inbox", more=children, find=find, remove=remove)


def _done(post: PostOffice, owner: str) -> Directory:
    def find(name: str) -> Node | None:
        message_id = name.removesuffix(".json")
        size = post.done_size(owner, message_id) if name.endswith(".json") else None
        return _DoneFile(post, owner, message_id, size) if size is not None else None

    def children() -> list[Node]:
        return [_DoneFile(post, owner, i, size) for i, size in post.done_sizes(owner)]

    return Directory("done", f"mail/{owner}/done", more=children, find=find)


class _DoneFile(TextFile):
    """An acknowledged message: read from disk only when it is read, so that a listing (whose stat
    records carry lengths, SPEC §4) or a walk reads none of them. Its length is its stored file's:
    a done message is never written again, and a read gives its bytes, one for one."""

    __slots__ = ("_stored",)

    def __init__(self, post: PostOffice, owner: str, message_id: str, size: int):
        def render() -> str:
            raw = post.read_done(owner, message_id)
            return same_length_text(raw) if raw is not None else ""
        super().__init__(f"{message_id}.json", f"mail/{owner}/done/{message_id}", render)
        self._stored = size

    def size(self) -> int:
        return self._stored


_UNDECODABLE = re.compile("[\udc80-\udcff]")  # the bytes surrogateescape could not decode, one each


def same_length_text(raw: bytes) -> str:
    """Stored bytes as text whose UTF-8 is exactly as long: what the server wrote is UTF-8 and comes
    back unchanged; a byte that is not (a file damaged on disk) reads as "?", so lengths still agree."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _UNDECODABLE.sub("?", raw.decode("utf-8", "surrogateescape"))
