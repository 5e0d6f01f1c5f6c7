"""Every message of 9P2000, 9P2000.u and 9P2000.L as a frozen dataclass.

A class's annotated fields, in order, are its wire layout after the
size[4] type[1] tag[2] header (see fields.py). Fields marked for a dialect
are absent from the wire in the others and keep their default there.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

from .consts import NOFID, NONUNAME
from .fields import U8, U16, U32, U64, Data, Names, Qid, QidF, Qids, Stat, StatF, Str, ULU32, UStr, UU32

MESSAGE_TYPES: dict[int, type[Message]] = {}


@dataclass(frozen=True, slots=True)
class Message:
    """Base of all messages; TYPE is the wire type number."""

    TYPE: typing.ClassVar[int] = -1
    tag: U16

    @property
    def is_request(self) -> bool:
        return self.TYPE % 2 == 0


def message(type_id: int):
    """Register a message class under its wire type number."""

    def register(cls):
        cls = dataclass(frozen=True, slots=True)(cls)
        cls.TYPE = type_id
        MESSAGE_TYPES[type_id] = cls
        return cls

    return register


# ---------------------------------------------------------------- 9P2000 (and .u)

@message(100)
class Tversion(Message):
    msize: U32
    version: Str


@message(101)
class Rversion(Message):
    msize: U32
    version: Str


@message(102)
class Tauth(Message):
    afid: U32
    uname: Str
    aname: Str
    n_uname: ULU32 = NONUNAME


@message(103)
class Rauth(Message):
    aqid: QidF


@message(104)
class Tattach(Message):
    fid: U32
    afid: U32 = NOFID
    uname: Str = ""
    aname: Str = ""
    n_uname: ULU32 = NONUNAME


@message(105)
class Rattach(Message):
    qid: QidF


@message(107)
class Rerror(Message):
    ename: Str
    errno: UU32 = 0


@message(108)
class Tflush(Message):
    oldtag: U16


@message(109)
class Rflush(Message):
    pass


@message(110)
class Twalk(Message):
    fid: U32
    newfid: U32
    wnames: Names = ()


@message(111)
class Rwalk(Message):
    wqids: Qids = ()


@message(112)
class Topen(Message):
    fid: U32
    mode: U8


@message(113)
class Ropen(Message):
    qid: QidF
    iounit: U32 = 0


@message(114)
class Tcreate(Message):
    fid: U32
    name: Str
    perm: U32
    mode: U8
    extension: UStr = ""


@message(115)
class Rcreate(Message):
    qid: QidF
    iounit: U32 = 0


@message(116)
class Tread(Message):
    fid: U32
    offset: U64
    count: U32


@message(117)
class Rread(Message):
    data: Data = b""


@message(118)
class Twrite(Message):
    fid: U32
    offset: U64
    data: Data = b""


@message(119)
class Rwrite(Message):
    count: U32


@message(120)
class Tclunk(Message):
    fid: U32


@message(121)
class Rclunk(Message):
    pass


@message(122)
class Tremove(Message):
    fid: U32


@message(123)
class Rremove(Message):
    pass


@message(124)
class Tstat(Message):
    fid: U32


@message(125)
class Rstat(Message):
    stat: StatF


@message(126)
class Twstat(Message):
    fid: U32
    stat: StatF


@message(127)
class Rwstat(Message):
    pass


# ---------------------------------------------------------------- 9P2000.L

@message(7)
class Rlerror(Message):
    ecode: U32


@message(8)
class Tstatfs(Message):
    fid: U32


@message(9)
class Rstatfs(Message):
    type: U32 = 0
    bsize: U32 = 0
    blocks: U64 = 0
    bfree: U64 = 0
    bavail: U64 = 0
    files: U64 = 0
    ffree: U64 = 0
    fsid: U64 = 0
    namelen: U32 = 0


@message(12)
class Tlopen(Message):
    fid: U32
    flags: U32


@message(13)
class Rlopen(Message):
    qid: QidF
    iounit: U32 = 0


@message(14)
class Tlcreate(Message):
    fid: U32
    name: Str
    flags: U32
    mode: U32
    gid: U32


@message(15)
class Rlcreate(Message):
    qid: QidF
    iounit: U32 = 0


@message(16)
class Tsymlink(Message):
    fid: U32
    name: Str
    symtgt: Str
    gid: U32


@message(17)
class Rsymlink(Message):
    qid: QidF


@message(18)
class Tmknod(Message):
    dfid: U32
    name: Str
    mode: U32
    major: U32
    minor: U32
    gid: U32


@message(19)
class Rmknod(Message):
    qid: QidF


@message(20)
class Trename(Message):
    fid: U32
    dfid: U32
    name: Str


@message(21)
class Rrename(Message):
    pass


@message(22)
class Treadlink(Message):
    fid: U32


@message(23)
class Rreadlink(Message):
    target: Str


@message(24)
class Tgetattr(Message):
    fid: U32
    request_mask: U64


@message(25)
class Rgetattr(Message):
    valid: U64
    qid: QidF
    mode: U32 = 0
    uid: U32 = 0
    gid: U32 = 0
    nlink: U64 = 0
    rdev: U64 = 0
    size: U64 = 0
    blksize: U64 = 0
    blocks: U64 = 0
    atime_sec: U64 = 0
    atime_nsec: U64 = 0
    mtime_sec: U64 = 0
    mtime_nsec: U64 = 0
    ctime_sec: U64 = 0
    ctime_nsec: U64 = 0
    btime_sec: U64 = 0
    btime_nsec: U64 = 0
    gen: U64 = 0
    data_version: U64 = 0


@message(26)
class Tsetattr(Message):
    fid: U32
    valid: U32
    mode: U32 = 0
    uid: U32 = 0
    gid: U32 = 0
    size: U64 = 0
    atime_sec: U64 = 0
    atime_nsec: U64 = 0
    mtime_sec: U64 = 0
    mtime_nsec: U64 = 0


@message(27)
class Rsetattr(Message):
    pass


@message(30)
class Txattrwalk(Message):
    fid: U32
    newfid: U32
    name: Str


@message(31)
class Rxattrwalk(Message):
    size: U64


@message(32)
class Txattrcreate(Message):
    fid: U32
    name: Str
    attr_size: U64
    flags: U32


@message(33)
class Rxattrcreate(Message):
    pass


@message(40)
class Treaddir(Message):
    fid: U32
    offset: U64
    count: U32


@message(41)
class Rreaddir(Message):
    data: Data = b""


@message(50)
class Tfsync(Message):
    fid: U32
    datasync: U32 = 0


@message(51)
class Rfsync(Message):
    pass


@message(52)
class Tlock(Message):
    fid: U32
    type: U8
    flags: U32
    start: U64
    length: U64
    proc_id: U32
    client_id: Str


@message(53)
class Rlock(Message):
    status: U8


@message(54)
class Tgetlock(Message):
    fid: U32
    type: U8
    start: U64
    length: U64
    proc_id: U32
    client_id: Str


@message(55)
class Rgetlock(Message):
    type: U8
    start: U64
    length: U64
    proc_id: U32
    client_id: Str


@message(70)
class Tlink(Message):
    dfid: U32
    fid: U32
    name: Str


@message(71)
class Rlink(Message):
    pass


@message(72)
class Tmkdir(Message):
    dfid: U32
    name: Str
    mode: U32
    gid: U32


@message(73)
class Rmkdir(Message):
    qid: QidF


@message(74)
class Trenameat(Message):
    olddirfid: U32
    oldname: Str
    newdirfid: U32
    newname: Str


@message(75)
class Rrenameat(Message):
    pass


@message(76)
class Tunlinkat(Message):
    dirfid: U32
    name: Str
    flags: U32


@message(77)
class Runlinkat(Message):
    pass


# Messages that exist only in 9P2000.L; the rest belong to every dialect
# (9P2000.L servers still speak Tversion, Tattach, Twalk, Tread, ...).
DOTL_ONLY = frozenset(t for t in MESSAGE_TYPES if t < 100)
# 9P2000.L replaces these with Rlerror / Tlopen / Tlcreate / Tgetattr / Tsetattr.
NOT_IN_DOTL = frozenset({107, 112, 113, 114, 115, 124, 125, 126, 127})

__all__ = ["MESSAGE_TYPES", "Message", "Qid", "Stat", "DOTL_ONLY", "NOT_IN_DOTL"] + sorted(
    cls.__name__ for cls in MESSAGE_TYPES.values()
)
