"""The 9P protocol core: messages, codec, framing, text form, fid/tag tables.

Sans-IO: bytes in, messages out; messages in, bytes out. No trio here.
"""

from . import consts, messages
from .codec import Codec, codec_for, decode, decode_stat, encode, encode_stat, frame_maker
from .consts import Dialect
from .dialect import negotiate, negotiate_msize
from .errors import (
    BadMessage,
    FramingError,
    LocalProtocolError,
    NinePError,
    RemoteProtocolError,
    RequestError,
)
from .fids import FidTable, TagTable
from .fields import Qid, Stat
from .framing import FrameBuffer

_TEXT_FORM = ("format_message", "parse_message")


def __getattr__(name: str):
    # The text form is for traces and transcripts, and needs every message
    # class (messages/__init__.py): a client never uses it, so it loads on first use.
    if name in _TEXT_FORM:
        from . import text  # noqa: PLC0415

        return getattr(text, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BadMessage",
    "Codec",
    "Dialect",
    "FidTable",
    "FrameBuffer",
    "FramingError",
    "LocalProtocolError",
    "NinePError",
    "Qid",
    "RemoteProtocolError",
    "RequestError",
    "Stat",
    "TagTable",
    "codec_for",
    "consts",
    "decode",
    "decode_stat",
    "encode",
    "encode_stat",
    "format_message",
    "frame_maker",
    "messages",
    "negotiate",
    "negotiate_msize",
    "parse_message",
]
