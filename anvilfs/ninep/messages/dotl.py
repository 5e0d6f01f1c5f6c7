"""The messages 9P2000.L adds (types below 100)."""

from ..fields import U8, U32, U64, Data, QidF, Str
from .base import Message, message


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
