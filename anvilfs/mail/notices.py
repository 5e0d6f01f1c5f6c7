"""Notices: a session that asked for them is prompted when it has new mail, never interrupted.

Mail that arrives for such a session waits in a list; when the session is
idle or in `await` with nothing queued (now, or when its turn ends: the
SessionMoved event), all of it goes in as one prompt, "3 new messages: ...".
Off by default: a notice turn replaces `out`, which a conductor that
waited for `await` may be about to read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..domain_events import EventBus, MailAcked, SessionEnded, SessionMoved
from ..errors import AnvilError
from .message import Message

DEFAULT_NOTICE = ("{count} new message{s}: {list}\n"
                  "Read them with `cat inbox/ID.json` in your anvilfs directory; `rm` one to acknowledge it.")
# for a session whose agent has anvilfs's tools (backends/agent_tools.py): it has no directory to cat in
TOOLS_NOTICE = ("{count} new message{s}: {list}\n"
                "Read each with the anvilfs tool read_message (mcp__anvilfs__read_message), act on it, then "
                "acknowledge it with ack (mcp__anvilfs__ack).")


@dataclass(frozen=True, slots=True)
class NoticeRules:
    """What the session manager answers for mail: who wants notices, who may take one now, how to prompt."""

    wants: Callable[[str], bool]
    ready: Callable[[str], bool]  # idle or await, nothing queued
    submit: Callable[[str, str, str], None]  # (session, text, sender): the session manager's public submit
    has_tools: Callable[[str], bool] = lambda session: False  # its agent reads mail with the tools, not files


class Notices:
    def __init__(self, bus: EventBus, rules: NoticeRules, text: str = DEFAULT_NOTICE, tools_text: str = TOOLS_NOTICE):
        self.bus, self.rules, self.text, self.tools_text = bus, rules, text, tools_text
        self._pending: dict[str, dict[str, Message]] = {}
        bus.subscribe(SessionMoved, lambda event: self._try(event.session))
        bus.subscribe(MailAcked, self._acked)
        bus.subscribe(SessionEnded, lambda event: self._pending.pop(event.session, None))

    def arrived(self, message: Message) -> None:
        if self.rules.wants(message.to):
            self._pending.setdefault(message.to, {})[message.id] = message
            self._try(message.to)

    def _acked(self, event: MailAcked) -> None:
        self._pending.get(event.by, {}).pop(event.id, None)  # read already: no need to tell

    def _try(self, session: str) -> None:
        messages = self._pending.get(session)
        if not messages or not self.rules.ready(session):
            return
        del self._pending[session]
        text = self.render(list(messages.values()), self.tools_text if self.rules.has_tools(session) else self.text)
        try:
            self.rules.submit(session, text, "mail")
        except AnvilError as exc:  # stopped meanwhile: the mail is in the inbox all the same
            if self.bus.journal is not None:
                self.bus.journal.append(f"- mail notice for {session} not sent: {exc.message}")

    def render(self, messages: list[Message], text: str | None = None) -> str:
        listing = "; ".join(f"{m.id} {m.type.value} from {m.sender}: {m.subject}" for m in messages)
        count = len(messages)
        return (text or self.text).format(count=count, s="" if count == 1 else "s", list=listing)
