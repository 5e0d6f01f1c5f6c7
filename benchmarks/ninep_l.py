"""The project's blocking client in 9P2000.L with a chosen aname, for servers such as diod.

diod speaks only 9P2000.L and wants its export path as aname; anvilfs
takes "" (or "agent").
"""

from __future__ import annotations

import socket
import time

from anvilfs.client import Client
from anvilfs.ninep import consts as c

MSIZE = 65536 + c.IOHDRSZ
RETRY_INTERVAL = 0.005  # s between connect attempts while a server starts


def connect(path: str, aname: str, deadline: float | None = None) -> Client:
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
        return Client(sock, msize=MSIZE, dialect=c.Dialect.P2000L, uname="root", aname=aname)
    except BaseException:
        sock.close()
        raise
