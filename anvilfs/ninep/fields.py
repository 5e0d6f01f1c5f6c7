"""Field kinds: how each message field is laid out on the wire.

Message classes annotate their fields with these aliases; the codec reads the
annotations once, so a message's class definition is its wire layout.
"""

import enum
from dataclasses import dataclass
from typing import Annotated

from .consts import NONUNAME


class Kind(enum.Enum):
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    STR = "s"
    DATA = "data"  # count[4] bytes
    QID = "qid"
    QIDS = "qids"  # n[2] qid*n
    NAMES = "names"  # n[2] s*n
    STAT = "stat"  # n[2] then a stat structure of n bytes


class Only(enum.Enum):
    """Marks a field that exists only in some dialects."""

    DOTU = "9P2000.u"  # 9P2000.u only
    DOTU_OR_L = "9P2000.u or 9P2000.L"  # the .u extension that .L inherited


U8 = Annotated[int, Kind.U8]
U16 = Annotated[int, Kind.U16]
U32 = Annotated[int, Kind.U32]
U64 = Annotated[int, Kind.U64]
Str = Annotated[str, Kind.STR]
Data = Annotated[bytes, Kind.DATA]
Names = Annotated[tuple[str, ...], Kind.NAMES]
UStr = Annotated[str, Kind.STR, Only.DOTU]
UU32 = Annotated[int, Kind.U32, Only.DOTU]
ULU32 = Annotated[int, Kind.U32, Only.DOTU_OR_L]


@dataclass(frozen=True, slots=True)
class Qid:
    """A server's unique identity of a file: type[1] version[4] path[8]."""

    type: int
    version: int
    path: int


QidF = Annotated[Qid, Kind.QID]
Qids = Annotated[tuple[Qid, ...], Kind.QIDS]


@dataclass(frozen=True, slots=True)
class Stat:
    """The directory entry of 9P2000 (stat(5)), with the 9P2000.u extension."""

    type: U16 = 0
    dev: U32 = 0
    qid: QidF = Qid(0, 0, 0)
    mode: U32 = 0
    atime: U32 = 0
    mtime: U32 = 0
    length: U64 = 0
    name: Str = ""
    uid: Str = ""
    gid: Str = ""
    muid: Str = ""
    extension: UStr = ""
    n_uid: UU32 = NONUNAME
    n_gid: UU32 = NONUNAME
    n_muid: UU32 = NONUNAME


StatF = Annotated[Stat, Kind.STAT]
