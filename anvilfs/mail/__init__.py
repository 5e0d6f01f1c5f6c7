"""Mail between participants (every session and `human`), approval requests and notices (SPEC §6; no 9P here)."""

from .files import MailFiles, MemoryMailFiles
from .message import Draft, Message, MessageType, parse_draft
from .notices import DEFAULT_NOTICE, TOOLS_NOTICE, NoticeRules, Notices
from .post import HUMAN, InboxFull, MailLimits, PostOffice

__all__ = ["DEFAULT_NOTICE", "HUMAN", "Draft", "InboxFull", "MailFiles", "MailLimits", "MemoryMailFiles", "Message",
           "MessageType", "NoticeRules", "Notices", "PostOffice", "TOOLS_NOTICE", "parse_draft"]
