"""Encode and decode 9P messages: bytes in, messages out, and back.

Layouts come from the annotated fields of the message classes, compiled once
per (class, dialect) into a tuple of (name, kind) steps. A Codec (one per
dialect) runs the functions compiled.py makes from those layouts, and falls
back to the field-by-field code here, which names what is wrong with a frame.
Everything here is pure: no I/O, no state beyond the compiled layouts.
"""

from __future__ import annotations

import functools
import struct
import typing
from collections.abc import Callable

from .consts import HEADER_SIZE, Dialect
from .errors import BadMessage, LocalProtocolError
from .fields import Kind, Only, Qid, Stat
from . import messages
from .compiled import compile_decoder, compile_encoder, compile_fields, compile_packer, constructor
from .messages.base import DOTL_LIMIT, MESSAGE_TYPES, Message

_HEADER = struct.Struct("<IBH")
_QID = struct.Struct("<BIQ")
_INTS = {
    Kind.U8: struct.Struct("<B"),
    Kind.U16: struct.Struct("<H"),
    Kind.U32: struct.Struct("<I"),
    Kind.U64: struct.Struct("<Q"),
}
_U16 = _INTS[Kind.U16]
_U32 = _INTS[Kind.U32]

Layout = tuple[tuple[str, Kind], ...]


def _present(only: Only | None, dialect: Dialect) -> bool:
    if only is None:
        return True
    if only is Only.DOTU:
        return dialect.is_u
    return dialect.is_u or dialect.is_l


@functools.cache
def layout(cls: type, dialect: Dialect) -> Layout:
    """The wire layout of a message or Stat class in a dialect (tag excluded)."""
    steps = []
    for name, hint in typing.get_type_hints(cls, include_extras=True).items():
        meta = getattr(hint, "__metadata__", None)
        if not meta or name == "tag":
            continue
        kind = meta[0]
        only = meta[1] if len(meta) > 1 else None
        if _present(only, dialect):
            steps.append((name, kind))
    return tuple(steps)


# ---------------------------------------------------------------- encoding

def _put_str(out: bytearray, value: str) -> None:
    raw = value.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise LocalProtocolError(f"string of {len(raw)} bytes is longer than 65535")
    out += _U16.pack(len(raw))
    out += raw


def _put(out: bytearray, kind: Kind, value, dialect: Dialect) -> None:
    packer = _INTS.get(kind)
    if packer is not None:
        out += packer.pack(value)
    elif kind is Kind.STR:
        _put_str(out, value)
    elif kind is Kind.DATA:
        out += _U32.pack(len(value))
        out += value
    elif kind is Kind.QID:
        out += _QID.pack(value.type, value.version, value.path)
    elif kind is Kind.QIDS:
        out += _U16.pack(len(value))
        for qid in value:
            out += _QID.pack(qid.type, qid.version, qid.path)
    elif kind is Kind.NAMES:
        out += _U16.pack(len(value))
        for name in value:
            _put_str(out, name)
    elif kind is Kind.STAT:
        raw = encode_stat(value, dialect)
        if len(raw) > 0xFFFF:
            raise LocalProtocolError(f"stat of {len(raw)} bytes does not fit its 16-bit size")
        out += _U16.pack(len(raw))
        out += raw
    else:  # pragma: no cover - the Kind enum is closed
        raise LocalProtocolError(f"unknown field kind {kind}")


def _put_fields(out: bytearray, record, dialect: Dialect) -> None:
    """Every wire field of a message or stat; a value that cannot go on the wire is our error."""
    for name, kind in layout(type(record), dialect):
        value = getattr(record, name)
        try:
            _put(out, kind, value, dialect)
        except LocalProtocolError:
            raise
        except (struct.error, UnicodeEncodeError, TypeError, AttributeError) as exc:
            raise LocalProtocolError(f"{type(record).__name__}.{name} cannot be encoded as {kind.value}: {exc}") from None


def encode_stat(stat: Stat, dialect: Dialect) -> bytes:
    """A stat structure as stat(5) lays it out: size[2] then the fields."""
    body = bytearray()
    _put_fields(body, stat, dialect)
    if len(body) > 0xFFFF:
        raise LocalProtocolError(f"stat of {len(body)} bytes does not fit its 16-bit size")
    return _U16.pack(len(body)) + bytes(body)


def _encode_fields(msg: Message, dialect: Dialect) -> bytes:
    """The generic encoder: field by field, so that a value that will not go on the wire is named."""
    body = bytearray(HEADER_SIZE)
    _put_fields(body, msg, dialect)
    try:
        _HEADER.pack_into(body, 0, len(body), msg.TYPE, msg.tag)
    except struct.error as exc:
        raise LocalProtocolError(f"bad tag {msg.tag!r}") from exc
    return bytes(body)


# ---------------------------------------------------------------- decoding

class _Reader:
    __slots__ = ("buf", "pos", "end", "tag")

    def __init__(self, buf, pos: int, end: int, tag: int | None):
        self.buf, self.pos, self.end, self.tag = buf, pos, end, tag

    def need(self, n: int, what: str) -> int:
        at = self.pos
        if at + n > self.end:
            raise BadMessage(f"message ends inside {what}", tag=self.tag)
        self.pos = at + n
        return at

    def int(self, kind: Kind, what: str) -> int:
        unpacker = _INTS[kind]
        return unpacker.unpack_from(self.buf, self.need(unpacker.size, what))[0]

    def str(self, what: str) -> str:
        n = _U16.unpack_from(self.buf, self.need(2, what))[0]
        at = self.need(n, what)
        try:
            return bytes(self.buf[at:at + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise BadMessage(f"{what} is not valid UTF-8", tag=self.tag) from None

    def qid(self, what: str) -> Qid:
        return Qid(*_QID.unpack_from(self.buf, self.need(_QID.size, what)))


def _get(r: _Reader, kind: Kind, name: str, dialect: Dialect):
    if kind in _INTS:
        return r.int(kind, name)
    if kind is Kind.STR:
        return r.str(name)
    if kind is Kind.DATA:
        n = r.int(Kind.U32, name)
        at = r.need(n, name)
        return bytes(r.buf[at:at + n])
    if kind is Kind.QID:
        return r.qid(name)
    if kind is Kind.QIDS:
        return tuple(r.qid(name) for _ in range(r.int(Kind.U16, name)))
    if kind is Kind.NAMES:
        return tuple(r.str(name) for _ in range(r.int(Kind.U16, name)))
    if kind is Kind.STAT:
        n = r.int(Kind.U16, name)
        at = r.need(n, name)
        return _decode_stat(_Reader(r.buf, at, at + n, r.tag), dialect)
    raise AssertionError(kind)  # pragma: no cover


def _decode_stat(r: _Reader, dialect: Dialect) -> Stat:
    size = r.int(Kind.U16, "stat size")
    if size != r.end - r.pos:
        raise BadMessage(f"stat size {size} does not match its {r.end - r.pos} bytes", tag=r.tag)
    values = {name: _get(r, kind, name, dialect) for name, kind in layout(Stat, dialect)}
    if r.pos != r.end:
        raise BadMessage(f"{r.end - r.pos} bytes left over inside a stat", tag=r.tag)
    return Stat(**values)


def decode_stat(raw: bytes, dialect: Dialect) -> Stat:
    """One stat structure (size[2] first), e.g. an entry of a 9P2000 directory read."""
    return _decode_stat(_Reader(raw, 0, len(raw), None), dialect)


def _load_dotl_type(type_id: int, dialect: Dialect) -> type[Message] | None:
    """The class of a 9P2000.L type not made yet (see messages/__init__.py); None if there is none."""
    if not dialect.is_l:
        return None
    messages.load_dotl()
    return MESSAGE_TYPES.get(type_id)


def _decode_fields(frame, dialect: Dialect) -> Message:
    """The generic decoder: field by field, so that a frame that is wrong says where."""
    if len(frame) < HEADER_SIZE:
        raise BadMessage(f"frame of {len(frame)} bytes is shorter than a header")
    size, type_id, tag = _HEADER.unpack_from(frame, 0)
    if size != len(frame):
        raise BadMessage(f"size field {size} does not match frame of {len(frame)} bytes", tag=tag)
    cls = _class_of(type_id, dialect)
    if cls is None:
        raise BadMessage(f"unknown message type {type_id} in {dialect.value}", tag=tag, type_id=type_id)
    r = _Reader(frame, HEADER_SIZE, size, tag)
    values = {name: _get(r, kind, name, dialect) for name, kind in layout(cls, dialect)}
    if r.pos != size:
        raise BadMessage(f"{size - r.pos} bytes left over after {cls.__name__}", tag=tag, type_id=type_id)
    return cls(tag=tag, **values)


def _class_of(type_id: int, dialect: Dialect) -> type[Message] | None:
    cls = MESSAGE_TYPES.get(type_id) or _load_dotl_type(type_id, dialect)
    if cls is None or (type_id < DOTL_LIMIT and not dialect.is_l):
        return None
    return cls


# ---------------------------------------------------------------- the per-dialect codec

class Codec:
    """encode and decode for one dialect, with each message class compiled on first use (compiled.py).

    Hold one per connection (``codec_for(dialect)``): it is what the hot path calls.
    """

    __slots__ = ("dialect", "_decoders", "_encoders", "_readers")

    def __init__(self, dialect: Dialect):
        self.dialect = dialect
        self._decoders: dict[int, Callable] = {}  # wire type -> compiled decoder (or the generic one)
        self._encoders: dict[type, Callable] = {}
        self._readers: dict[type, Callable] = {}  # request class -> its field reader

    def decode(self, frame) -> Message:
        """Decode one whole frame (size prefix included) into a message."""
        decoder = self._decoders.get(frame[4]) if len(frame) >= HEADER_SIZE else None
        if decoder is None:
            decoder = self._decoder(frame)
        msg = decoder(frame)
        return msg if msg is not None else _decode_fields(frame, self.dialect)

    def encode(self, msg: Message) -> bytes:
        """The whole frame of a message, size prefix included."""
        encoder = self._encoders.get(type(msg)) or self._encoder(type(msg))
        frame = encoder(msg)
        return frame if frame is not None else _encode_fields(msg, self.dialect)

    def fields(self, cls: type[Message]) -> Callable[[bytes], tuple]:
        """frame -> (tag, *cls's fields in order): a request's fields for what answers it, with no message
        built (a server's every request). A frame that is not well formed raises (NotWellFormed, struct.error
        or BadMessage); ``decode`` then names what is wrong with it."""
        read = self._readers.get(cls)
        if read is None:
            read = compile_fields(cls, layout(cls, self.dialect)) or self._fields_slowly
            self._readers[cls] = read
        return read

    def _fields_slowly(self, frame) -> tuple:
        return _decode_fields(frame, self.dialect)._values()

    def _decoder(self, frame) -> Callable:
        cls = _class_of(frame[4], self.dialect) if len(frame) >= HEADER_SIZE else None
        if cls is None:
            return _no_fast_path  # the generic decoder names the problem
        decoder = compile_decoder(cls, layout(cls, self.dialect)) or _no_fast_path
        self._decoders[frame[4]] = decoder
        return decoder

    def _encoder(self, cls: type) -> Callable:
        encoder = compile_encoder(cls, layout(cls, self.dialect)) or _no_fast_path
        self._encoders[cls] = encoder
        return encoder


def _no_fast_path(_) -> None:
    return None


_CODECS = {dialect: Codec(dialect) for dialect in Dialect}


def codec_for(dialect: Dialect) -> Codec:
    return _CODECS[dialect]


def message_classes(dialect: Dialect) -> list[type[Message]]:
    """Every message class of `dialect` by its wire type (requests and replies), 9P2000.L's loaded."""
    if dialect.is_l:
        messages.load_dotl()
    return [cls for type_id, cls in sorted(MESSAGE_TYPES.items()) if _class_of(type_id, dialect) is cls]


def frame_maker(cls: type[Message]) -> Callable[..., bytes | Message]:
    """(tag, *fields in order) -> cls's frame, for a reply a server makes for every request (Rread,
    Rclunk): no message is built, nor looked up to encode. For values that do not fit their fields it
    gives the message instead, for the codec to refuse with what is wrong. Only for a class whose
    layout is the same in every dialect, since the frame is made before it meets a connection."""
    layouts = {layout(cls, dialect) for dialect in Dialect}
    if len(layouts) != 1:
        raise ValueError(f"{cls.__name__} is laid out differently by dialect: encode it through a Codec")
    packer = compile_packer(cls, layouts.pop(), constructor(cls))
    if packer is None:
        raise ValueError(f"{cls.__name__} has a field the compiled encoders do not handle: encode it through a Codec")
    return packer


def decode(frame, dialect: Dialect) -> Message:
    """Decode one whole frame (size prefix included) into a message."""
    return _CODECS[dialect].decode(frame)


def encode(msg: Message, dialect: Dialect) -> bytes:
    """The whole frame of a message, size prefix included."""
    return _CODECS[dialect].encode(msg)
