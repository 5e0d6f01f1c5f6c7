"""The one canonical text form of every message, for tracing and transcripts.

    Twalk tag 1 fid 1 newfid 2 wnames [agent "a b"]
    Rwalk tag 1 wqids [(0x80 0 1)]
    Rread tag 3 data "await\\n"
    Rstat tag 4 stat {qid (0x0 0 7) mode 0o444 name list}

Integers are decimal (modes octal, qid types hex); strings are bare words
when that is unambiguous, else double-quoted with backslash escapes; data is
always quoted (bytes outside printable ASCII as \\xNN); a qid is
(type version path); a stat lists only its fields that differ from the
defaults. Fields that exist only in some dialects are left out at their
default. ``parse`` reads this form back, so transcripts are written in it.
"""

from __future__ import annotations

import dataclasses
import re
import typing

from .errors import LocalProtocolError
from .fields import Kind, Qid, Stat
from .messages import MESSAGE_TYPES, Message

_BY_NAME = {cls.__name__: cls for cls in MESSAGE_TYPES.values()}
_OCTAL = {"mode", "perm"}
_BARE = re.compile(r"[A-Za-z0-9._/:+@=,-]+\Z")
_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[\[\](){}]|[^\s\[\](){}"]+)')
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\\": "\\\\", '"': '\\"'}
_UNESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}


def _fields(cls) -> list[tuple[str, Kind, bool, typing.Any]]:
    """(name, kind, dialect-only, default) for each wire field of cls."""
    hints = typing.get_type_hints(cls, include_extras=True)
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    out = []
    for name, hint in hints.items():
        meta = getattr(hint, "__metadata__", None)
        if meta:
            out.append((name, meta[0], len(meta) > 1, defaults.get(name, dataclasses.MISSING)))
    return out


# ---------------------------------------------------------------- formatting

def _quote(text: str) -> str:
    if text and _BARE.match(text):
        return text
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _quote_bytes(data: bytes, limit: int | None) -> str:
    shown = data if limit is None else data[:limit]
    out = []
    for b in shown:
        ch = chr(b)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{b:02x}")
    more = "" if len(shown) == len(data) else f"...({len(data)} bytes)"
    return '"' + "".join(out) + '"' + more


def _qid(q: Qid) -> str:
    return f"(0x{q.type:x} {q.version} {q.path})"


def _value(name: str, kind: Kind, value, limit: int | None) -> str:
    if kind is Kind.STR:
        return _quote(value)
    if kind is Kind.DATA:
        return _quote_bytes(value, limit)
    if kind is Kind.QID:
        return _qid(value)
    if kind is Kind.QIDS:
        return "[" + " ".join(_qid(q) for q in value) + "]"
    if kind is Kind.NAMES:
        return "[" + " ".join(_quote(n) for n in value) + "]"
    if kind is Kind.STAT:
        return _stat(value)
    return oct(value) if name in _OCTAL else str(value)


def _stat(stat: Stat) -> str:
    parts = [
        f"{name} {_value(name, kind, getattr(stat, name), None)}"
        for name, kind, _, default in _fields(Stat)
        if getattr(stat, name) != default
    ]
    return "{" + " ".join(parts) + "}"


def format_message(msg: Message, *, data_limit: int | None = None) -> str:
    """The canonical text of a message; data_limit shortens data for traces."""
    parts = [type(msg).__name__, "tag", str(msg.tag)]
    for name, kind, dialect_only, default in _fields(type(msg)):
        if name == "tag":
            continue
        value = getattr(msg, name)
        if dialect_only and value == default:
            continue
        parts += [name, _value(name, kind, value, data_limit)]
    return " ".join(parts)


# ---------------------------------------------------------------- parsing

class _Tokens:
    def __init__(self, text: str):
        self.items = [m.group(1) for m in _TOKEN.finditer(text)]
        rest = _TOKEN.sub("", text).strip()
        if rest:
            raise LocalProtocolError(f"cannot read {rest!r} in {text!r}")
        self.pos = 0

    def take(self) -> str:
        if self.pos >= len(self.items):
            raise LocalProtocolError("message text ends too soon")
        tok = self.items[self.pos]
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.take()
        if got != tok:
            raise LocalProtocolError(f"expected {tok!r}, found {got!r}")

    def peek(self) -> str | None:
        return self.items[self.pos] if self.pos < len(self.items) else None


def _unquote(tok: str) -> str:
    if not tok.startswith('"'):
        return tok
    body, out, i = tok[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1]
            if nxt == "x":
                out.append(chr(int(body[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(_UNESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _parse_qid(t: _Tokens) -> Qid:
    t.expect("(")
    qid = Qid(int(t.take(), 0), int(t.take(), 0), int(t.take(), 0))
    t.expect(")")
    return qid


def _parse_list(t: _Tokens, item) -> tuple:
    t.expect("[")
    out = []
    while t.peek() != "]":
        out.append(item(t))
    t.expect("]")
    return tuple(out)


def _parse_value(t: _Tokens, kind: Kind):
    if kind is Kind.STR:
        return _unquote(t.take())
    if kind is Kind.DATA:
        return _unquote(t.take()).encode("latin-1")
    if kind is Kind.QID:
        return _parse_qid(t)
    if kind is Kind.QIDS:
        return _parse_list(t, _parse_qid)
    if kind is Kind.NAMES:
        return _parse_list(t, lambda t: _unquote(t.take()))
    if kind is Kind.STAT:
        t.expect("{")
        return Stat(**_parse_pairs(t, Stat, closer="}"))
    return int(t.take(), 0)


def _parse_pairs(t: _Tokens, cls, closer: str | None) -> dict:
    kinds = {name: kind for name, kind, _, _ in _fields(cls)}
    values = {}
    while (tok := t.peek()) is not None and tok != closer:
        name = t.take()
        if name not in kinds:
            raise LocalProtocolError(f"{cls.__name__} has no field {name!r}")
        values[name] = _parse_value(t, kinds[name])
    if closer is not None:
        t.expect(closer)
    return values


def parse_message(text: str) -> Message:
    """Read the canonical text form back into a message."""
    t = _Tokens(text)
    name = t.take()
    cls = _BY_NAME.get(name)
    if cls is None:
        raise LocalProtocolError(f"unknown message {name!r}")
    try:
        values = _parse_pairs(t, cls, closer=None)
    except (ValueError, KeyError, IndexError) as exc:
        raise LocalProtocolError(f"{name}: cannot read {text!r}: {exc}") from None
    try:
        return cls(**values)
    except TypeError as exc:
        raise LocalProtocolError(f"{name}: {exc}") from None
