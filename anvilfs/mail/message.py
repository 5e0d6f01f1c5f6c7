"""A message: what a participant writes (a Draft, checked by pydantic) and what is delivered (a Message).

A writer gives ``to``, ``type``, ``subject`` and ``body`` (and optionally
``re``, the id of the message answered, and ``bead``); the server fills
``id``, ``from`` and ``timestamp``. The delivered form is one JSON object,
the same in the database (store.py: the table mail) and in the tree.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .. import boundedjson
from ..errors import InvalidRequest
from ..journal import has_line_breakers

MAX_SUBJECT = 200  # characters: a subject is one line of `events`, `approvals` and notices
ID = re.compile(r"\d{16}\Z")
_BEAD = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\Z")
SERVER_FIELDS = ("id", "from", "timestamp")


class MessageType(enum.StrEnum):
    PROMPT_REQUEST = "PROMPT_REQUEST"
    PROMPT_RESPONSE = "PROMPT_RESPONSE"
    QUERY_REQUEST = "QUERY_REQUEST"
    QUERY_RESPONSE = "QUERY_RESPONSE"
    REVIEW_REQUEST = "REVIEW_REQUEST"
    REVIEW_RESPONSE = "REVIEW_RESPONSE"
    APPROVAL_REQUEST = "APPROVAL_REQUEST"
    APPROVAL_RESPONSE = "APPROVAL_RESPONSE"
    REWORK_REQUEST = "REWORK_REQUEST"  # from anvilfs: the merge queue could not merge a bead's branch
    BUDGET_SPENT = "BUDGET_SPENT"  # from anvilfs to human: a budget stopped a session's queued prompts


TYPES = ", ".join(t.value for t in MessageType)


class Draft(BaseModel):
    """What a participant writes to its `mail` file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: str = Field(min_length=1, max_length=64)
    type: MessageType
    subject: str = Field(min_length=1, max_length=MAX_SUBJECT)
    body: str = ""
    re: str | None = None
    bead: str | None = None

    @field_validator("subject")
    @classmethod
    def _one_line(cls, subject: str) -> str:
        if has_line_breakers(subject):
            raise ValueError("must be one line without control characters (it is shown in events and approvals)")
        return subject

    @field_validator("body")
    @classmethod
    def _unicode(cls, body: str) -> str:
        try:
            body.encode("utf-8")  # a lone \ud800 escape parses, but is no character: it could not be stored
        except UnicodeEncodeError as exc:
            raise ValueError(f"has a lone surrogate \\u{ord(body[exc.start]):04x} at character {exc.start}; "
                             "write the character itself, or both halves of its surrogate pair") from None
        return body

    @field_validator("re")
    @classmethod
    def _message_id(cls, value: str | None) -> str | None:
        if value is not None and not ID.match(value):
            raise ValueError("must be the 16-digit id of the message answered, e.g. \"1739587200000001\"")
        return value

    @field_validator("bead")
    @classmethod
    def _bead_id(cls, value: str | None) -> str | None:
        if value is not None and not _BEAD.match(value):
            raise ValueError("must be a bead id such as impl-oauth-002")
        return value


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    sender: str
    to: str
    type: MessageType
    subject: str
    body: str
    timestamp: str
    re: str | None = None
    bead: str | None = None

    @classmethod
    def of(cls, draft: Draft, *, id: str, sender: str, timestamp: str) -> Message:
        return cls(id, sender, draft.to, draft.type, draft.subject, draft.body, timestamp, draft.re, draft.bead)

    def to_json(self) -> bytes:
        doc = {"id": self.id, "from": self.sender, "to": self.to, "type": self.type.value, "subject": self.subject,
               "body": self.body, "timestamp": self.timestamp}
        doc.update({k: v for k, v in (("re", self.re), ("bead", self.bead)) if v is not None})
        return (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, raw: bytes) -> Message:
        doc = json.loads(raw)
        draft = Draft.model_validate({k: v for k, v in doc.items() if k not in SERVER_FIELDS})
        return cls.of(draft, id=str(doc["id"]), sender=str(doc["from"]), timestamp=str(doc["timestamp"]))


def parse_draft(data: bytes) -> Draft:
    """The draft in what was written, or an InvalidRequest that says what is wrong and how to write it."""
    try:
        doc = boundedjson.loads(data)
    except boundedjson.TooDeep as exc:
        raise InvalidRequest(f"mail: {exc}; write one flat object: "
                             '{"to":"human","type":"QUERY_REQUEST","subject":"...","body":"..."}') from None
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"mail is not UTF-8 at byte {exc.start}; write a JSON object") from None
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"mail is not JSON ({exc.msg} at byte {exc.pos}); write one object: "
                             '{"to":"human","type":"QUERY_REQUEST","subject":"...","body":"..."}') from None
    if not isinstance(doc, dict):
        raise InvalidRequest(f"mail is a JSON {type(doc).__name__}, not an object; write "
                             '{"to":...,"type":...,"subject":...,"body":...}')
    filled = [k for k in SERVER_FIELDS if k in doc]
    if filled:
        raise InvalidRequest(f"mail gives {', '.join(filled)}: the server fills id, from and timestamp; leave them out")
    try:
        return Draft.model_validate(doc)
    except ValidationError as exc:
        raise InvalidRequest(f"mail: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "message"
    if error["type"] == "enum":
        return f"type {error['input']!r} is not a message type; types: {TYPES}"
    if error["type"] == "missing":
        return f"{where} is missing; a message has to, type, subject and body"
    if error["type"] == "extra_forbidden":
        return f"{where} is not a field of a message; fields: to, type, subject, body, re, bead"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"
