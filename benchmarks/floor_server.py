"""The floor: the least a trio 9P server in CPython can cost per request.

A benchmark tool, not product code. It answers just what speed.py's C client
sends (Tversion, Tattach, Twalk, Tlopen/Topen, Tread, Tclunk) for a tree of
NAME/status files, the way issue 11 describes its 300-line measuring server:

- the request is handled inline in the receive loop (no task, no queue);
- the replies to one receive's requests go out in one write;
- the socket is read before it is waited on: an epoll wait only when a
  non-blocking read finds nothing.

Nothing else: no flush, no limits, no back-pressure, no error texts worth
the name. What anvilfs spends beyond this per request is its own code.

    python benchmarks/floor_server.py SOCKET NAME... --status BYTES
"""

from __future__ import annotations

import argparse
import os
import socket
import struct

import trio

HEAD = struct.Struct("<IBH")
QID = struct.Struct("<BIQ")
U16, U32 = struct.Struct("<H"), struct.Struct("<I")
WALK = struct.Struct("<IIH")   # fid newfid nwname
READ = struct.Struct("<IQI")   # fid offset count
RLERROR, RERROR = 7, 107
QTDIR, QTFILE = 0x80, 0


class Tree:
    """root / NAME / status: a path number per node, the status bytes shared."""

    def __init__(self, names: list[str], status: bytes):
        self.status = status
        self.children = {0: {name: 2 * i + 1 for i, name in enumerate(names, 0)}}
        for i in range(len(names)):
            self.children[2 * i + 1] = {"status": 2 * i + 2}

    def qid(self, path: int) -> bytes:
        return QID.pack(QTDIR if path in self.children else QTFILE, 0, path)


def reply(rtype: int, tag: int, body: bytes = b"") -> bytes:
    return HEAD.pack(7 + len(body), rtype, tag) + body


class Conn:
    def __init__(self, fd: int, tree: Tree):
        self.fd, self.tree = fd, tree
        self.fids: dict[int, int] = {}  # fid -> path number
        self.dotl = True

    def error(self, tag: int) -> bytes:
        if self.dotl:
            return reply(RLERROR, tag, U32.pack(2))
        return reply(RERROR, tag, U16.pack(5) + b"error")

    def handle(self, frame: bytes) -> bytes:
        _, kind, tag = HEAD.unpack_from(frame)
        try:
            return HANDLERS[kind](self, frame, tag)
        except (KeyError, struct.error, UnicodeDecodeError):
            return self.error(tag)

    def version(self, frame: bytes, tag: int) -> bytes:
        msize = U32.unpack_from(frame, 7)[0]
        n = U16.unpack_from(frame, 11)[0]
        version = frame[13:13 + n]
        self.dotl = version == b"9P2000.L"
        self.fids.clear()
        answer = version if version in (b"9P2000", b"9P2000.L") else b"unknown"
        return reply(101, tag, U32.pack(min(msize, 1 << 20)) + U16.pack(len(answer)) + answer)

    def attach(self, frame: bytes, tag: int) -> bytes:
        self.fids[U32.unpack_from(frame, 7)[0]] = 0
        return reply(105, tag, self.tree.qid(0))

    def walk(self, frame: bytes, tag: int) -> bytes:
        fid, newfid, n = WALK.unpack_from(frame, 7)
        path, pos, qids = self.fids[fid], 17, []
        for _ in range(n):
            k = U16.unpack_from(frame, pos)[0]
            name = frame[pos + 2:pos + 2 + k].decode()
            pos += 2 + k
            child = self.tree.children.get(path, {}).get(name)
            if child is None:
                break
            path = child
            qids.append(self.tree.qid(path))
        if not qids and n:
            return self.error(tag)
        if len(qids) == n:
            self.fids[newfid] = path
        return reply(111, tag, U16.pack(len(qids)) + b"".join(qids))

    def open(self, frame: bytes, tag: int) -> bytes:
        path = self.fids[U32.unpack_from(frame, 7)[0]]
        rtype = 13 if frame[4] == 12 else 113  # Rlopen or Ropen
        return reply(rtype, tag, self.tree.qid(path) + U32.pack(8192))

    def read(self, frame: bytes, tag: int) -> bytes:
        fid, offset, count = READ.unpack_from(frame, 7)
        path = self.fids[fid]
        data = b"" if path in self.tree.children else self.tree.status[offset:offset + count]
        return reply(117, tag, U32.pack(len(data)) + data)

    def clunk(self, frame: bytes, tag: int) -> bytes:
        del self.fids[U32.unpack_from(frame, 7)[0]]
        return reply(121, tag)

    async def serve(self) -> None:
        buf = b""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)  # read first: the next request is usually there
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.fd)
                continue
            except OSError:
                return
            if not data:
                return
            buf += data
            out = []
            while len(buf) >= 4 and len(buf) >= (size := U32.unpack_from(buf)[0]):
                out.append(self.handle(buf[:size]))
                buf = buf[size:]
            if out:
                await self.send(b"".join(out))  # the batch's replies in one write

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.fd)


HANDLERS = {100: Conn.version, 104: Conn.attach, 110: Conn.walk, 12: Conn.open, 112: Conn.open,
            116: Conn.read, 120: Conn.clunk}


async def handle_client(sock: socket.socket, tree: Tree) -> None:
    with sock:
        try:
            await Conn(sock.fileno(), tree).serve()
        except OSError:
            pass


async def main(path: str, tree: Tree) -> None:
    # Bound under a temporary name and renamed once listening: whoever sees `path`
    # can connect at once (a socket file exists from bind(), before listen()).
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".binding")
    listener.listen(64)
    os.rename(path + ".binding", path)
    listener.setblocking(False)
    async with trio.open_nursery() as nursery:
        while True:
            await trio.lowlevel.wait_readable(listener.fileno())
            try:
                sock, _ = listener.accept()
            except BlockingIOError:
                continue
            sock.setblocking(False)
            nursery.start_soon(handle_client, sock, tree)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("socket")
    ap.add_argument("names", nargs="+", help="the directories, each with one file `status`")
    ap.add_argument("--status", default="idle simulated\n", help="the bytes of every status file")
    args = ap.parse_args()
    trio.run(main, args.socket, Tree(args.names, args.status.encode()))
