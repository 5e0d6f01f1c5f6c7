"""The messages of 9P2000, with the fields 9P2000.u adds (marked for their dialects)."""

from ..consts import NOFID, NONUNAME
from ..fields import U8, U16, U32, U64, Data, Names, QidF, Qids, StatF, Str, ULU32, UStr, UU32
from .base import Message, message


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
