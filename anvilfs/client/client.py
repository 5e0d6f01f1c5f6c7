"""A small blocking 9P2000 client over one socket, on the sans-IO client core (protocol.py).

It is what `anvilfs read|write|ls|stat|rdwr` use, and what the benchmark
drives; requests are sent one at a time. anvilfs/aioclient is the one that
keeps many in flight.
"""

from __future__ import annotations

import socket
from collections import deque

from ..ninep import Dialect, Qid, Stat
from ..ninep import consts as c
from ..ninep import messages as m
from .errors import ConnectionLost, ServerError, lost
from .protocol import DEFAULT_MSIZE, ClientProtocol, Reply, check, directory_entries

# Bytes asked of the socket at a time: a whole 64 KiB read's reply and more. At 64 KiB (what it was), every
# full Rread took two receives and a copy to join them (10-25 µs more a reply, benchmarks/history.md).
RECEIVE_SIZE = 1 << 17

__all__ = ["Client", "ConnectionLost", "ServerError"]


class Client:
    def __init__(self, sock: socket.socket, *, msize: int = DEFAULT_MSIZE, dialect: Dialect = Dialect.P2000,
                 uname: str = "none", aname: str = ""):
        self.sock = sock
        self.dialect = dialect
        self.protocol = ClientProtocol(dialect, msize)
        self._replies: deque[m.Message] = deque()  # replies that came in one receive with an earlier one
        self._send(self.protocol.version_request())
        check(self.receive())
        self.root = self.new_fid()
        self.rpc(m.Tattach(tag=0, fid=self.root, uname=uname, aname=aname))

    @property
    def msize(self) -> int:
        return self.protocol.msize

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def new_fid(self) -> int:
        return self.protocol.new_fid()

    # ------------------------------------------------------------ messages

    def _send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise lost(exc) from None

    def send(self, msg: m.Message) -> int:
        """Send a request without waiting for its reply, to have several in flight; the tag it was given.

        receive() then gives the replies in the order they come.
        """
        tag, data = self.protocol.request(msg)
        self._send(data)
        return tag

    def receive(self) -> m.Message:
        """The next reply that came, as it came (an Rerror too): to the one request in flight, or to
        what send() pipelined."""
        while not self._replies:
            try:
                data = self.sock.recv(RECEIVE_SIZE)
            except OSError as exc:
                raise lost(exc) from None
            if not data:
                raise lost()
            self._replies.extend(e.message for e in self.protocol.receive_data(data) if isinstance(e, Reply))
        return self._replies.popleft()

    def exchange(self, msg: m.Message) -> m.Message:
        """Send one request with a fresh tag and return its reply as it came (an Rerror too)."""
        self.send(msg)
        return self.receive()

    def rpc(self, msg: m.Message) -> m.Message:
        """Send one request with a fresh tag and return its reply; Rerror raises ServerError."""
        return check(self.exchange(msg))

    # ------------------------------------------------------------ files

    def walk(self, path: str) -> int:
        names = [n for n in path.split("/") if n]
        fid = self.new_fid()
        first = True
        while first or names:
            step, names = names[:c.MAXWELEM], names[c.MAXWELEM:]
            source = self.root if first else fid
            reply = self.rpc(m.Twalk(tag=0, fid=source, newfid=fid, wnames=tuple(step)))
            if len(reply.wqids) != len(step):
                if not first:
                    self.clunk(fid)
                raise ServerError(f"{path}: {step[len(reply.wqids)]!r} does not exist")
            first = False
        return fid

    def open(self, path: str, mode: int) -> int:
        return self.open_with_qid(path, mode)[0]

    def open_with_qid(self, path: str, mode: int) -> tuple[int, Qid]:
        """Walk and open; the qid tells a directory (QTDIR) from a file."""
        fid = self.walk(path)
        try:
            reply = self.rpc(m.Topen(tag=0, fid=fid, mode=mode))
        except ServerError:
            self.clunk(fid)
            raise
        return fid, reply.qid

    def clunk(self, fid: int) -> None:
        self.rpc(m.Tclunk(tag=0, fid=fid))

    def read_chunk(self, fid: int, offset: int, count: int | None = None) -> bytes:
        count = count or self.msize - c.IOHDRSZ
        return self.rpc(m.Tread(tag=0, fid=fid, offset=offset, count=count)).data

    def read_chunks(self, fid: int):
        offset = 0
        while data := self.read_chunk(fid, offset):
            yield data
            offset += len(data)

    def write_chunk(self, fid: int, offset: int, data: bytes) -> int:
        return self.rpc(m.Twrite(tag=0, fid=fid, offset=offset, data=data)).count

    def write_all(self, fid: int, data: bytes, offset: int = 0) -> int:
        """Write in pieces of at most the iounit; returns the offset after the data."""
        unit = self.msize - c.IOHDRSZ
        for start in range(0, len(data), unit):
            offset += self.write_chunk(fid, offset, data[start:start + unit])
        return offset

    def read_file(self, path: str) -> bytes:
        fid = self.open(path, c.OREAD)
        try:
            return b"".join(self.read_chunks(fid))
        finally:
            self.clunk(fid)

    def read_back(self, path: str, data: bytes) -> bytes:
        """Write DATA on one open fid, then read what the file answers on it (SPEC §4 read-back: a new id, a
        message's id or why it was refused)."""
        fid = self.open(path, c.ORDWR)
        try:
            self.write_all(fid, data)
            return self.read_chunk(fid, 0)
        finally:
            self.clunk(fid)

    def write_file(self, path: str, data: bytes) -> None:
        fid = self.open(path, c.OWRITE)
        try:
            self.write_all(fid, data)
        finally:
            self.clunk(fid)

    def remove(self, path: str) -> None:
        """Tremove: the server clunks the fid whether or not the remove worked."""
        self.rpc(m.Tremove(tag=0, fid=self.walk(path)))

    def stat(self, path: str) -> Stat:
        fid = self.walk(path)
        try:
            return self.rpc(m.Tstat(tag=0, fid=fid)).stat
        finally:
            self.clunk(fid)

    def list_dir(self, path: str) -> list[Stat]:
        fid = self.open(path, c.OREAD)
        try:
            return [entry for data in self.read_chunks(fid) for entry in directory_entries(data, self.dialect)]
        finally:
            self.clunk(fid)
