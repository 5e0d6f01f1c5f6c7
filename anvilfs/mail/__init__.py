"""Mail between participants (every session and `human`), approval requests and notices (SPEC §6; no 9P here)."""

from .message import Draft, Message, MessageType, parse_draft
from .notices import DEFAULT_NOTICE, TOOLS_NOTICE, NoticeRules, Notices
from .post import HUMAN, InboxFull, MailLimits, PostOffice
from .store import MailTables, MemoryMailFiles

__all__ = ["DEFAULT_NOTICE", "HUMAN", "Draft", "InboxFull", "MailLimits", "MailTables", "MemoryMailFiles", "Message",
           "MessageType", "NoticeRules", "Notices", "PostOffice", "TOOLS_NOTICE", "parse_draft"]
