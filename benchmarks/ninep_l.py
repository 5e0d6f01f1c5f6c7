"""The project's blocking client in 9P2000.L with a chosen aname, for servers such as diod.

anvilfs.client.Client attaches with aname "" in 9P2000; diod speaks only
9P2000.L and wants its export path as aname. LClient does that handshake
itself and then uses the inherited rpc()/send()/receive().
"""

from __future__ import annotations

import socket
import time

from anvilfs.client import Client, ServerError
from anvilfs.ninep import FrameBuffer
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

MSIZE = 65536 + c.IOHDRSZ
RETRY_INTERVAL = 0.005  # s between connect attempts while a server starts


class LClient(Client):
    def __init__(self, sock: socket.socket, *, aname: str, uname: str = "root", msize: int = MSIZE):
        self.sock = sock
        self.dialect = c.Dialect.P2000L
        self._frames = FrameBuffer(msize)
        self._tag = 0
        self._fids = iter(range(1, 1 << 31))
        reply = self.rpc(m.Tversion(tag=c.NOTAG, msize=msize, version=self.dialect.value))
        if reply.version != self.dialect.value:
            raise ServerError(f"server does not speak {self.dialect.value} (answered {reply.version})")
        self.msize = reply.msize
        self._frames.max_size = self.msize
        self.root = self.new_fid()
        self.rpc(m.Tattach(tag=0, fid=self.root, afid=c.NOFID, uname=uname, aname=aname, n_uname=0))


def connect(path: str, aname: str, deadline: float | None = None) -> LClient:
    """Connect to a unix socket and do the 9P2000.L handshake.

    With a deadline, keep retrying connect() until it succeeds or the
    deadline passes (diod leaves a stale socket file behind, so the file's
    existence does not mean the server is up).
    """
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            break
        except OSError:
            sock.close()
            if deadline is None or time.monotonic() > deadline:
                raise
            time.sleep(RETRY_INTERVAL)  # poll interval, bounded by the deadline
    try:
        return LClient(sock, aname=aname)
    except BaseException:
        sock.close()
        raise
