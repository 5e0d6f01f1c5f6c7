"""Encoders and decoders compiled per (message class, dialect): the codec's hot path.

A busy server decodes and encodes a handful of message kinds (walk, open,
read, write, clunk, getattr) thousands of times a second; the generic codec
interprets each class's layout field by field. Here a class's layout is
turned once into one function: a single ``struct`` call for the leading
fixed-size fields and the header together, then the variable fields, and a
constructor that fills the slots directly (the frozen dataclass ``__init__``
sets each field through ``object.__setattr__``, a third of a decode's time).

These functions only ever handle well-formed input. A frame that does not
fit (a size that disagrees, a string that is not UTF-8, a field that will
not pack) makes them return None, and the generic codec then does the work
again field by field, to name what is wrong. Nothing here is a second
definition of the wire format: every function is generated from ``layout``.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable

from .fields import Kind, Qid
from .messages.base import Message

Layout = tuple[tuple[str, Kind], ...]

_FIXED = {Kind.U8: "B", Kind.U16: "H", Kind.U32: "I", Kind.U64: "Q", Kind.QID: "BIQ"}
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_QID = struct.Struct("<BIQ")


def split_fixed(steps: Layout) -> tuple[str, Layout, Layout]:
    """The struct format of the leading fixed-size fields, those fields, and the rest."""
    fmt, count = "", 0
    for _, kind in steps:
        if kind not in _FIXED:
            break
        fmt += _FIXED[kind]
        count += 1
    return fmt, steps[:count], steps[count:]


def _values_of(fixed: Layout, start: int) -> tuple[list[str], int]:
    """Expressions building each fixed field from the unpacked tuple `v`, from index `start`."""
    exprs, i = [], start
    for _, kind in fixed:
        if kind is Kind.QID:
            exprs.append(f"Qid(v[{i}], v[{i + 1}], v[{i + 2}])")
            i += 3
        else:
            exprs.append(f"v[{i}]")
            i += 1
    return exprs, i


def _maker(cls: type, names: list[str], lead: tuple[str, ...] = ("tag",)) -> Callable | None:
    """Build an instance from (tag, *the named fields) without the frozen __init__, which sets
    each slot through object.__setattr__; fields the dialect does not carry get their defaults.
    None if such a field has no default (the generic decoder then builds it, and says so)."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.name not in names and f.name not in lead}
    if any(value is dataclasses.MISSING for value in defaults.values()):
        return None
    order = [*lead, *names]
    env = {"new": object.__new__, "cls": cls}
    body = []
    for i, name in enumerate([*order, *defaults]):
        env[f"s{i}"] = getattr(cls, name).__set__
        body.append(f"    s{i}(o, a{i})\n" if i < len(order) else f"    s{i}(o, d{i})\n")
        if i >= len(order):
            env[f"d{i}"] = defaults[name]
    args = ", ".join(f"a{i}" for i in range(len(order)))
    exec(f"def make({args}):\n    o = new(cls)\n{''.join(body)}    return o\n", env)  # noqa: S102 - built above
    return env["make"]


_QID_MAKE = _maker(Qid, [], lead=("type", "version", "path"))


class _Short(Exception):
    """A length in a frame that reaches past its end (raised and caught inside a compiled decoder)."""


class NotWellFormed(Exception):
    """A frame a compiled field reader cannot read: the generic decoder names what is wrong with it."""


def constructor(cls: type[Message]) -> Callable[..., Message]:
    """cls built from its fields in order (tag first), positionally: what ``cls(tag=..., ...)`` builds,
    faster. For the replies a server makes for every request (Rwalk, Rread, Rclunk)."""
    return _maker(cls, list(cls.FIELDS[1:]))


# ---------------------------------------------------------------- decoding

_TAIL_DECODE = {
    Kind.STR: "    n = U16(f, p)[0]; p += 2\n"
              "    if p + n > size: raise Short\n"
              "    x{i} = f[p:p + n].decode(); p += n\n",
    Kind.DATA: "    n = U32(f, p)[0]; p += 4\n"
               "    if p + n > size: raise Short\n"
               "    x{i} = f[p:p + n]; p += n\n",
    Kind.NAMES: "    n = U16(f, p)[0]; p += 2; items = []\n"
                "    for _ in range(n):\n"
                "        k = U16(f, p)[0]; p += 2\n"
                "        if p + k > size: raise Short\n"
                "        items.append(f[p:p + k].decode()); p += k\n"
                "    x{i} = tuple(items)\n",
    Kind.QIDS: "    n = U16(f, p)[0]; p += 2\n"
               "    if p + 13 * n > size: raise Short\n"
               "    x{i} = tuple(Qid(*QID(f, p + 13 * j)) for j in range(n)); p += 13 * n\n",
}


def compile_decoder(cls: type[Message], steps: Layout) -> Callable[[bytes], Message | None] | None:
    """frame -> message, or None when the frame is not well formed; None if a field kind is not compiled."""
    make = _maker(cls, [name for name, _ in steps])
    if make is None:
        return None
    return _compile_reader(steps, "f", "make(v[2]{args})", "None", {"make": make})


def compile_fields(cls: type[Message], steps: Layout) -> Callable[[bytes], tuple] | None:
    """frame -> (tag, *every field of cls in order): a request's fields for the code that answers it,
    with no message built; fields the dialect does not carry get their defaults. A frame that is not
    well formed raises NotWellFormed (or struct.error), before anything is answered: the generic
    decoder then says what is wrong. A frame of fixed-size fields only is read by one ``struct`` call
    in C (its size is checked there); the rest by a function compiled from the layout. None if a field
    kind is not compiled, or an absent field has no default.

    Frames come whole from the frame buffer, whose size field is their length: not checked again."""
    present = {name for name, _ in steps}
    defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.name != "tag" and f.name not in present}
    if any(value is dataclasses.MISSING for value in defaults.values()):
        return None
    fmt, fixed, rest = split_fixed(steps)
    in_order = [name for name, _ in steps] == list(cls.FIELDS[1:])
    if not rest and in_order and all(kind is not Kind.QID for _, kind in fixed):
        return struct.Struct("<5xH" + fmt).unpack  # skips size and type: (tag, *fields)
    env = {"Bad": NotWellFormed, **{f"D_{name}": value for name, value in defaults.items()}}
    order = [name if name in present else f"D_{name}" for name in cls.FIELDS[1:]]
    return _compile_reader(steps, "f", "(v[2]{args})", "Bad()", env, order, raising=True)


def _compile_reader(steps: Layout, params: str, result: str, fail: str, env: dict,
                    order: list[str] | None = None, raising: bool = False) -> Callable | None:
    """The text of a decoder of `steps` that returns `result` with {args} the fields (in layout order, or
    as `order` names them: a field's name, or a global of the env), or `fail` for a frame that is not well
    formed (raises it, if `raising`)."""
    fmt, fixed, rest = split_fixed(steps)
    if any(kind not in _TAIL_DECODE for _, kind in rest):
        return None  # a stat: left to the generic codec (Rstat and Twstat are not hot)
    head = struct.Struct("<IBH" + fmt)
    exprs, _ = _values_of(fixed, 3)
    lines = [f"def read({params}):\n", "    size = len(f)\n"]
    if rest:
        lines.append("    if size < HEAD_SIZE: return @FAIL@\n")
    else:
        lines.append("    if size != HEAD_SIZE: return @FAIL@\n")
    lines.append("    v = HEAD(f, 0)\n    if v[0] != size: return @FAIL@\n")
    if rest:
        lines.append("    p = HEAD_SIZE\n    try:\n")
        for i, (_, kind) in enumerate(rest):
            lines.append(_indent(_TAIL_DECODE[kind].format(i=i)))
        # the failure is returned from the except clause, outside the try: what a handler raises is its own
        lines.append("    except (struct.error, UnicodeDecodeError, Short):\n        return @FAIL@\n")
        lines.append("    if p != size: return @FAIL@\n")
        exprs += [f"x{i}" for i in range(len(rest))]
    if order is not None:
        by_name = dict(zip((name for name, _ in steps), exprs))
        exprs = [by_name.get(name, name) for name in order]
    lines.append("    return " + result.format(args="".join(", " + e for e in exprs)) + "\n")
    text = "".join(lines)
    if raising:
        text = text.replace("return @FAIL@", "raise @FAIL@")
    env = {**env, "HEAD": head.unpack_from, "HEAD_SIZE": head.size, "U16": _U16.unpack_from,
           "U32": _U32.unpack_from, "QID": _QID.unpack_from, "Qid": _QID_MAKE, "struct": struct, "Short": _Short}
    exec(text.replace("@FAIL@", fail), env)  # noqa: S102 - text built above from the layout
    return env["read"]


def _indent(block: str) -> str:
    return "".join("    " + line + "\n" for line in block.splitlines())


# ---------------------------------------------------------------- encoding

_TAIL_ENCODE = {
    Kind.STR: "    r = {value}.encode()\n"
              "    if len(r) > 0xFFFF: return @FAIL@\n"
              "    parts += (U16(len(r)), r)\n",
    Kind.DATA: "    r = {value}\n"
               "    parts += (U32(len(r)), r)\n",
    Kind.NAMES: "    parts.append(U16(len({value})))\n"
                "    for s in {value}:\n"
                "        r = s.encode()\n"
                "        if len(r) > 0xFFFF: return @FAIL@\n"
                "        parts += (U16(len(r)), r)\n",
    Kind.QIDS: "    parts.append(U16(len({value})))\n"
               "    parts += [QID(q.type, q.version, q.path) for q in {value}]\n",
}


# A last field that is the only variable one: its length (or count) goes in the head's struct
# call, and the frame is that head plus its bytes (Rread, Rwalk, Rversion, Rerror: one join fewer).
_LAST_ENCODE = {
    Kind.STR: ("H", "        r = {value}.encode()\n        if len(r) > 0xFFFF: return @FAIL@\n", "len(r)", "r"),
    Kind.DATA: ("I", "        r = {value}\n", "len(r)", "r"),
    Kind.QIDS: ("H", "        r = {value}\n"
                     "        if type(r) is bytes and not len(r) % 13: return HEAD(HEAD_SIZE + len(r), {head}, len(r) // 13) + r\n",
                "13 * len(r)", "b''.join([QID(q.type, q.version, q.path) for q in r])"),
}
# A last qids field may also be given packed, as bytes (13 a qid): a server walking to a file has its
# qids packed already (server/attrs.py keeps each with its bytes), and an Rwalk then costs one join.


def compile_encoder(cls: type[Message], steps: Layout) -> Callable[[Message], bytes | None] | None:
    """message -> frame, or None when a value does not fit its field; None if a field kind is not compiled."""
    return _compile_framer(cls, steps, "m", "m.{name}", "None", {})


def compile_packer(cls: type[Message], steps: Layout, make: Callable[..., Message]) -> Callable[..., bytes | Message] | None:
    """(tag, *fields in order) -> frame: what the encoder makes of ``make(tag, *fields)``, without the
    message. For values that do not fit their fields it returns that message instead, whose encoding
    then says what is wrong. None if a field kind is not compiled."""
    params = ", ".join(f"a_{name}" for name in ("tag", *(name for name, _ in steps)))  # a_: no clash with the globals
    return _compile_framer(cls, steps, params, "a_{name}", f"make({params})", {"make": make})


def _compile_framer(cls: type[Message], steps: Layout, params: str, value: str, fail: str, env: dict) -> Callable | None:
    """The encoder's text, reading each field as `value` says (m.x, or a parameter x) from `params`;
    `fail` is what it returns for a value that does not fit."""
    fmt, fixed, rest = split_fixed(steps)
    if any(kind not in _TAIL_ENCODE for _, kind in rest):
        return None
    last = _LAST_ENCODE.get(rest[0][1]) if len(rest) == 1 else None
    head = struct.Struct("<IBH" + fmt + (last[0] if last else ""))
    values = []
    for name, kind in fixed:
        field = value.format(name=name)
        values += [f"{field}.type", f"{field}.version", f"{field}.path"] if kind is Kind.QID else [field]
    tag = value.format(name="tag")
    args = "".join(", " + v for v in values)
    lines = [f"def frame({params}):\n", "    try:\n"]
    if not rest:
        lines.append(f"        return HEAD(HEAD_SIZE, TYPE, {tag}{args})\n")
    elif last:
        _, prepare, length, body = last
        lines.append(prepare.format(value=value.format(name=rest[0][0]), head=f"TYPE, {tag}{args}"))
        lines.append(f"        return HEAD(HEAD_SIZE + {length}, TYPE, {tag}{args}, len(r)) + {body}\n")
    else:
        lines.append("        parts = [b'']\n")
        for name, kind in rest:
            lines.append(_indent(_TAIL_ENCODE[kind].format(value=value.format(name=name))))
        lines.append("        size = HEAD_SIZE + sum(map(len, parts))\n")
        lines.append(f"        parts[0] = HEAD(size, TYPE, {tag}{args})\n")
        lines.append("        return b''.join(parts)\n")
    lines.append("    except (struct.error, UnicodeEncodeError, TypeError, AttributeError):\n        return @FAIL@\n")
    env = {**env, "HEAD": head.pack, "HEAD_SIZE": head.size, "TYPE": cls.TYPE, "U16": _U16.pack, "U32": _U32.pack,
           "QID": _QID.pack, "struct": struct}
    exec("".join(lines).replace("@FAIL@", fail), env)  # noqa: S102 - text built above from the layout
    return env["frame"]

