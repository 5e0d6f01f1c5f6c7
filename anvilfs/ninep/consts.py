"""Numbers fixed by the 9P2000, 9P2000.u and 9P2000.L specifications."""

from __future__ import annotations

import enum

NOTAG = 0xFFFF
NOFID = 0xFFFFFFFF
NONUNAME = 0xFFFFFFFF
MAXWELEM = 16
HEADER_SIZE = 7  # size[4] type[1] tag[2]
IOHDRSZ = 24  # room Rread/Twrite headers need inside msize (plan9 fcall.h)


class Dialect(enum.Enum):
    """The protocol variant agreed by Tversion; values are the version strings."""

    P2000 = "9P2000"
    P2000U = "9P2000.u"
    P2000L = "9P2000.L"

    @property
    def is_u(self) -> bool:
        return self is Dialect.P2000U

    @property
    def is_l(self) -> bool:
        return self is Dialect.P2000L


# Qid types (the high byte of a mode in 9P2000).
QTDIR = 0x80
QTAPPEND = 0x40
QTEXCL = 0x20
QTAUTH = 0x08
QTTMP = 0x04
QTFILE = 0x00

# 9P2000 mode bits.
DMDIR = 0x80000000
DMAPPEND = 0x40000000
DMEXCL = 0x20000000
DMAUTH = 0x08000000
DMTMP = 0x04000000

# Topen modes.
OREAD = 0
OWRITE = 1
ORDWR = 2
OEXEC = 3
OTRUNC = 0x10
ORCLOSE = 0x40

# Linux open flags as carried by Tlopen / Tlcreate.
L_O_ACCMODE = 0o3
L_O_EXCL = 0o200
L_O_TRUNC = 0o1000

# POSIX file-type bits as carried by 9P2000.L modes.
S_IFDIR = 0o040000
S_IFREG = 0o100000

# Tgetattr request / Rgetattr valid mask.
GETATTR_BASIC = 0x000007FF
GETATTR_ALL = 0x00003FFF

# Tsetattr valid bits.
SETATTR_MODE = 0x1
SETATTR_UID = 0x2
SETATTR_GID = 0x4
SETATTR_SIZE = 0x8
