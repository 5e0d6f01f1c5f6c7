"""Two servers of one tree side by side, one answering from frames (server/hotpath.py), one not.

For tests/wire/test_hotpath.py: a tree with every kind of file the
frame-level path meets and some that fail in each way they can; the frames
of requests drawn as tuples (``Frames``); two connections over unix socket
pairs, the test's ends plain sockets (``Served``); and a conversation that
sends both the same batches and compares what each sent once both are idle.
"""

from __future__ import annotations

import socket
import struct

import trio
import trio.testing

from anvilfs.errors import NotFound
from anvilfs.ninep import Dialect, FrameBuffer, codec_for
from anvilfs.ninep import messages as m
from anvilfs.ninep.consts import NOFID
from anvilfs.server import Connection, Limits
from anvilfs.tree import Caller, CollectFile, Command, CommandTable, CtlFile, Directory, File, Handle, StreamFile, TextFile
from anvilfs.waitable import Later

from .deadlines import within

ROOT = 0
LIMITS = Limits(max_fids=5, max_unsent=4096)  # the fid limit within reach; big reads pass the unsent limit
BIG = 20_000  # bytes of the file `big`: more than one read of an 8 KiB msize carries
NAMES = ("dir", "status", "notes", "ctl", "in", "slow", "broken", "events", "parked", "shaky", "textdata", "gone",
         "odd", "boom", "big", "mail", "a", "b", "nope", "..", ".", "", "x/y")
PATHS = tuple([name.encode() for name in path] for path in (
    ("status",), ("dir", "a", "status"), ("dir", "b", "status"), ("dir", "status"), ("notes",), ("ctl",), ("in",),
    ("slow",), ("broken",), ("events",), ("parked",), ("shaky",), ("textdata",), ("gone",), ("odd", "boom"),
    ("odd", "fixed"), ("big",), ("mail",), ("dir",), ("dir", "a"), (), ("dir", "..", "status")))


# ---------------------------------------------------------------- the tree


class _Cursor:
    """A stream's cursor: `ready` as given (or raising), and a read of bytes (or of text, which no reply carries)."""

    def __init__(self, ready: bool | None = True, data: object = b"event\n"):
        self._ready, self._data = ready, data

    def ready(self, offset: int) -> bool:
        if self._ready is None:
            raise RuntimeError("a cursor that cannot say")
        return self._ready

    async def wait_ready(self, offset: int) -> None:
        if not self._ready:
            await trio.sleep_forever()  # parked until flushed or clunked

    def read(self, offset: int, count: int):
        return self._data


class _Gate(Later):
    """A submission that lands when the test opens its server's gate (after each batch's replies)."""

    def __init__(self, server: Served) -> None:
        self._server = server

    async def wait(self) -> None:
        await self._server.gate.wait()


class _ReadBack(File):
    """Mail's way: what an open wrote is sent by its next read, which answers how much went."""

    def open(self, caller: Caller) -> Handle:
        return _ReadBackHandle()


class _ReadBackHandle(Handle):
    def __init__(self) -> None:
        self.buf = b""

    def write(self, offset: int, data: bytes) -> int:
        self.buf += data
        return len(data)

    def held(self) -> int:
        return len(self.buf)

    def read(self, offset: int, count: int) -> bytes:
        sent, self.buf = len(self.buf), b""
        return b"sent %d\n" % sent


def _raise(error: Exception):
    def fail(*args):
        raise error
    return fail


def tree(server: Served) -> Directory:
    """Every kind of file the frame-level path meets, and some that fail in each way they can."""
    table = CommandTable([Command("echo", lambda args: " ".join(args.words), "echo WORD...", max_words=None)])

    def submit(data: bytes, caller: Caller) -> None:
        server.submitted.append((caller.uname, data.decode(errors="replace")))

    def submit_later(data: bytes, caller: Caller) -> Later:
        submit(data, caller)
        return _Gate(server)

    def collect(name: str, on_submit) -> CollectFile:
        return CollectFile(name, name, check=lambda size, caller: None, submit=on_submit,
                           abandoned=lambda data, caller: None)

    lines: list[str] = []
    objects = {name: Directory(name, f"obj/{name}", [TextFile("status", f"obj/{name}/status", lambda n=name: f"{n} idle\n")])
               for name in ("a", "b")}
    gone = TextFile("gone", "gone", lambda: "")
    gone.stamp = _raise(NotFound("gone: the bead was removed"))  # a bead file whose bead is gone
    return Directory("/", "/", [
        Directory("dir", "dir", [TextFile("status", "dir/status", lambda: "busy since long ago\n" * 3)],
                  more=lambda: list(objects.values()), find=objects.get),
        Directory("odd", "odd", [TextFile("fixed", "odd/fixed", lambda: "x\n")],
                  find=_raise(ValueError("not a file name inside a state directory"))),
        TextFile("status", "status", lambda: "idle\n"),
        TextFile("notes", "notes", lambda: "".join(lines), on_line=lambda line, caller: lines.append(line + "\n")),
        CtlFile("ctl", "ctl", table, readable=True),
        collect("in", submit),
        collect("slow", submit_later),
        TextFile("broken", "broken", _raise(RuntimeError("a bug behind one file"))),
        StreamFile("events", "events", _Cursor),
        StreamFile("parked", "parked", lambda: _Cursor(ready=False)),
        StreamFile("shaky", "shaky", lambda: _Cursor(ready=None)),
        StreamFile("textdata", "textdata", lambda: _Cursor(data="not bytes")),
        gone,
        _ReadBack("mail", "mail", 0o600),
        TextFile("big", "big", lambda: "0123456789" * (BIG // 10)),
    ])


# ---------------------------------------------------------------- the frames

_HEAD = struct.Struct("<IBH")


class Frames:
    """Makes the frames of drawn requests, in the dialect the conversation is in (a Tversion changes it)."""

    def __init__(self, dialect: Dialect):
        self.dialect, self.tag = dialect, 10

    def __call__(self, request: tuple, how: str | None) -> bytes:
        tag, self.tag = self.tag, self.tag + 1
        return mangled(self._frame(request, tag), how)

    def _frame(self, request: tuple, tag: int) -> bytes:
        kind, *rest = request
        codec = codec_for(self.dialect)
        if kind == "walk":
            fid, newfid, names = rest
            body = struct.pack("<IIH", fid, newfid, len(names)) + b"".join(struct.pack("<H", len(n)) + n for n in names)
            return _HEAD.pack(7 + len(body), m.Twalk.TYPE, tag) + body
        if kind in ("open", "other open"):  # the modes are Linux flags and 9P modes alike, cut to a byte for Topen
            if (self.dialect is Dialect.P2000L) == (kind == "open"):
                return codec.encode(m.Tlopen(tag=tag, fid=rest[0], flags=rest[1]))
            return codec.encode(m.Topen(tag=tag, fid=rest[0], mode=rest[1] & 0xFF))
        if kind == "read":
            return codec.encode(m.Tread(tag=tag, fid=rest[0], offset=rest[1], count=rest[2]))
        if kind == "write":
            return codec.encode(m.Twrite(tag=tag, fid=rest[0], offset=0, data=rest[1]))
        if kind == "clunk":
            return codec.encode(m.Tclunk(tag=tag, fid=rest[0]))
        if kind == "getattr":  # 9P2000.L's; in the other dialects, a request the server does not know
            return codec_for(Dialect.P2000L).encode(m.Tgetattr(tag=tag, fid=rest[0], request_mask=rest[1]))
        if kind == "flush":
            return codec.encode(m.Tflush(tag=tag, oldtag=tag - rest[0]))
        if kind == "version":
            self.dialect = Dialect(rest[0])
            return codec.encode(m.Tversion(tag=0xFFFF, msize=rest[1], version=rest[0]))
        assert kind == "attach", kind
        return codec.encode(m.Tattach(tag=tag, fid=ROOT, afid=NOFID, uname="me", aname="", n_uname=1000))


def mangled(frame: bytes, how: str | None) -> bytes:
    """The frame a byte longer or shorter than its type's layout (its size field agreeing)."""
    if how == "long":
        frame += b"\0"
    elif how == "short" and len(frame) > 7:
        frame = frame[:-1]
    return struct.pack("<I", len(frame)) + frame[4:]


# ---------------------------------------------------------------- the two servers


class Served:
    """One connection over a socket pair, serving its own tree; the test's end is a plain socket."""

    def __init__(self, nursery: trio.Nursery, hot: bool):
        self.submitted: list[tuple[str, str]] = []
        self.errors: list[tuple[str, str]] = []
        self.gate = trio.Event()
        self.root = tree(self)
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        self.sock = ours
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(theirs))
        self.conn = Connection(stream, self.root, hot_path=hot, limits=LIMITS,
                               on_error=lambda where, text: self.errors.append((where, text)))
        nursery.start_soon(self.conn.serve)
        self.frames = FrameBuffer(1 << 20)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def take(self) -> list[bytes]:
        """The whole frames the server has sent so far."""
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                break
            assert data, "the server closed the connection"
            self.frames.feed(data)
        return self.frames.frames()

    def land_submissions(self) -> None:
        self.gate.set()
        self.gate = trio.Event()

    def state(self) -> dict:
        d = self.conn.dispatcher
        return {"fids": {n: ([node.key for node in f.trail], f.caller, f.handle is None, f.can_read, f.can_write,
                             f.listing is None) for n, f in d.fids.by_number.items()},
                "in flight": sorted(self.conn.tags), "collected": d.collected.held,
                "snapshot bytes": d.snapshots.held_bytes, "submitted": self.submitted, "errors": self.errors}


async def settled(servers: list[Served]) -> list[list[bytes]]:
    """What each server sends until all of them wait for nothing the test has not given yet.

    Compared as sets of frames: the replies of reads parked in tasks and ended together (a clunk of
    their fid) come in the order trio runs the tasks, which it varies on purpose."""
    got: list[list[bytes]] = [[] for _ in servers]
    with within(10, "the servers to settle"):
        while True:
            await trio.testing.wait_all_tasks_blocked()
            more = [server.take() for server in servers]
            if not any(more):  # a reply larger than the socket's buffer comes in parts
                return got
            for replies, part in zip(got, more):
                replies += part


async def conversation(dialect: Dialect, batches: list[list[tuple[tuple, str | None]]]) -> None:
    async with trio.open_nursery() as nursery:
        servers = [Served(nursery, hot=True), Served(nursery, hot=False)]
        make = Frames(dialect)
        hello = codec_for(Dialect.P2000).encode(m.Tversion(tag=0xFFFF, msize=8192, version=dialect.value)) + \
            make(("attach",), None)
        for step, batch in enumerate([[(("hello",), None)], *batches]):
            data = hello if step == 0 else b"".join(make(request, how) for request, how in batch)
            for server in servers:
                server.send(data)
            hot, plain = await settled(servers)
            assert sorted(hot) == sorted(plain), (step, batch)
            for server in servers:  # the submissions of this batch land: their deferred Rclunks go out
                server.land_submissions()
            hot, plain = await settled(servers)
            assert sorted(hot) == sorted(plain), (step, batch, "after the submissions landed")
            assert servers[0].state() == servers[1].state(), (step, batch)
        nursery.cancel_scope.cancel()
