"""A small blocking 9P2000 client over one socket, built on the sans-IO codec.

It is what `anvilfs read|write|ls|stat|rdwr` use, and what the benchmark
drives; requests are sent one at a time.
"""

from __future__ import annotations

import dataclasses
import socket
import struct

from ..ninep import Dialect, FrameBuffer, Qid, Stat, decode, decode_stat, encode
from ..ninep import consts as c
from ..ninep import messages as m


class ServerError(Exception):
    """The server answered Rerror (or Rlerror); the text is the server's."""


class ConnectionLost(ConnectionError):
    """The connection to the server broke or was closed by it.

    Its own type, so that a caller can tell it from a BrokenPipeError of its
    own standard output (`anvilfs read agent/events | head -1`).
    """


def _lost(exc: OSError | None = None) -> ConnectionLost:
    why = f" ({exc.strerror or exc})" if exc is not None else ""
    return ConnectionLost(f"the server closed the connection{why}")


class Client:
    def __init__(self, sock: socket.socket, *, msize: int = 65536 + c.IOHDRSZ, dialect: Dialect = Dialect.P2000,
                 uname: str = "none", aname: str = ""):
        self.sock = sock
        self.dialect = dialect
        self._frames = FrameBuffer(msize)
        self._tag = 0
        self._fids = iter(range(1, 1 << 31))
        reply = self.rpc(m.Tversion(tag=c.NOTAG, msize=msize, version=dialect.value))
        if reply.version != dialect.value:
            raise ServerError(f"server does not speak {dialect.value} (answered {reply.version})")
        self.msize = reply.msize
        self._frames.max_size = self.msize
        self.root = self.new_fid()
        self.rpc(m.Tattach(tag=0, fid=self.root, uname=uname, aname=aname))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def new_fid(self) -> int:
        return next(self._fids)

    # ------------------------------------------------------------ messages

    def send(self, msg: m.Message) -> None:
        try:
            self.sock.sendall(encode(msg, self.dialect))
        except OSError as exc:
            raise _lost(exc) from None

    def receive(self) -> m.Message:
        while (frame := self._frames.next_frame()) is None:
            try:
                data = self.sock.recv(1 << 16)
            except OSError as exc:
                raise _lost(exc) from None
            if not data:
                raise _lost()
            self._frames.feed(data)
        return decode(frame, self.dialect)

    def rpc(self, msg: m.Message) -> m.Message:
        """Send one request with a fresh tag and return its reply."""
        if not isinstance(msg, m.Tversion):
            self._tag = (self._tag + 1) % c.NOTAG
            msg = dataclasses.replace(msg, tag=self._tag)
        self.send(msg)
        reply = self.receive()
        if isinstance(reply, m.Rerror):
            raise ServerError(reply.ename)
        if self.dialect.is_l and isinstance(reply, m.Rlerror):  # asking for Rlerror makes every .L class
            raise ServerError(f"errno {reply.ecode}")
        return reply

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

    def write_file(self, path: str, data: bytes) -> None:
        fid = self.open(path, c.OWRITE)
        try:
            self.write_all(fid, data)
        finally:
            self.clunk(fid)

    def stat(self, path: str) -> Stat:
        fid = self.walk(path)
        try:
            return self.rpc(m.Tstat(tag=0, fid=fid)).stat
        finally:
            self.clunk(fid)

    def list_dir(self, path: str) -> list[Stat]:
        fid = self.open(path, c.OREAD)
        entries = []
        try:
            for data in self.read_chunks(fid):
                pos = 0
                while pos < len(data):
                    size = struct.unpack_from("<H", data, pos)[0] + 2
                    entries.append(decode_stat(data[pos:pos + size], self.dialect))
                    pos += size
        finally:
            self.clunk(fid)
        return entries

