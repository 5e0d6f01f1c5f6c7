"""The 9P protocol core: messages, codec, framing, text form, fid/tag tables.

Sans-IO: bytes in, messages out; messages in, bytes out. No trio here.
"""

from . import consts, messages
from .codec import decode, decode_stat, encode, encode_stat
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
from .text import format_message, parse_message

__all__ = [
    "BadMessage",
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
    "consts",
    "decode",
    "decode_stat",
    "encode",
    "encode_stat",
    "format_message",
    "messages",
    "negotiate",
    "negotiate_msize",
    "parse_message",
]
