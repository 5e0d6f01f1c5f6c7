"""The frame-level path (server/hotpath.py) answers exactly as the message path would.

Two connections, each over its own copy of one tree, are sent the same
frames: one answers plain walks, opens, reads and clunks from their frames,
the other (``hot_path=False``) decodes every request into a message. Every
reply must be the same bytes, the errors recorded the same, and at the end
both must hold the same fids in the same states and count the same bytes
held, after every batch. The requests are drawn by hypothesis from what a client can send:
names that exist or not, "." and "..", walks past a file or of 17 names,
fids in use, open modes a file refuses, reads at any offset, clunks that
submit, and frames a byte too long or too short.
"""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import Dialect, FrameBuffer, codec_for
from anvilfs.ninep import messages as m
from anvilfs.ninep.consts import NOFID
from anvilfs.server import Connection, Limits
from anvilfs.server.hotpath import HotPath
from anvilfs.tree import Caller, CollectFile, Command, CommandTable, CtlFile, Directory, File, Handle, StreamFile, TextFile
from anvilfs.waitable import Later
from harness.deadlines import within

ROOT = 0
FIDS = (ROOT, 1, 2, 3, 4, NOFID)
NAMES = ("dir", "status", "notes", "ctl", "in", "slow", "broken", "events", "big", "mail", "a", "b", "nope", "..", ".", "", "x/y")
PATHS = tuple([name.encode() for name in path] for path in (
    ("status",), ("dir", "a", "status"), ("dir", "b", "status"), ("dir", "status"), ("notes",), ("ctl",), ("in",),
    ("slow",), ("broken",), ("events",), ("big",), ("dir",), ("dir", "a"), (), ("dir", "..", "status")))
BIG = 20_000  # bytes of the file `big`: more than one read of an 8 KiB msize carries


class _ReadyCursor:
    """A stream whose data is always there: its reads never wait."""

    def ready(self, offset: int) -> bool:
        return True

    async def wait_ready(self, offset: int) -> None:
        return None

    def read(self, offset: int, count: int) -> bytes:
        return b"event %d\n" % offset


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


def _broken() -> str:
    raise RuntimeError("a bug behind one file")


class _Done(Later):
    """A submission already on disk: the deferred clunk is answered at once."""

    def __init__(self) -> None:
        pass

    async def wait(self) -> None:
        return None


def tree() -> tuple[Directory, list[str]]:
    """A tree of every kind of file the hot path meets, and the list its submissions land in."""
    submitted: list[str] = []
    table = CommandTable([Command("echo", lambda args: " ".join(args.words), "echo WORD...", max_words=None)])

    def submit(data: bytes, caller: Caller) -> None:
        submitted.append(data.decode(errors="replace"))

    def submit_later(data: bytes, caller: Caller) -> Later:
        submit(data, caller)
        return _Done()

    def collect(name: str, on_submit) -> CollectFile:
        return CollectFile(name, name, check=lambda size, caller: None, submit=on_submit,
                           abandoned=lambda data, caller: None)

    lines: list[str] = []
    objects = {name: Directory(name, f"obj/{name}", [TextFile("status", f"obj/{name}/status", lambda n=name: f"{n} idle\n")])
               for name in ("a", "b")}
    root = Directory("/", "/", [
        Directory("dir", "dir", [TextFile("status", "dir/status", lambda: "busy since long ago\n" * 3)],
                  more=lambda: list(objects.values()), find=objects.get),
        TextFile("status", "status", lambda: "idle\n"),
        TextFile("notes", "notes", lambda: "".join(lines), on_line=lambda line, caller: lines.append(line + "\n")),
        CtlFile("ctl", "ctl", table, readable=True),
        collect("in", submit),
        collect("slow", submit_later),
        TextFile("broken", "broken", _broken),
        StreamFile("events", "events", _ReadyCursor),
        _ReadBack("mail", "mail", 0o600),
        TextFile("big", "big", lambda: "0123456789" * (BIG // 10)),
    ])
    return root, submitted


# ---------------------------------------------------------------- the requests

_HEAD = struct.Struct("<IBH")
_fids = st.sampled_from(FIDS)
_junk_names = st.lists(st.sampled_from(NAMES).map(str.encode) | st.just(b"\xff\xfe"), max_size=17)
_paths = st.one_of(*[st.sampled_from(PATHS)] * 3, _junk_names)  # mostly a path that is there
_walk = st.builds(lambda fid, newfid, names: ("walk", fid, newfid, names), _fids, _fids, _paths)
_modes = st.sampled_from((0, 1, 2, 3, 0x10, 0x12, 0x40, 0o1000, 0o1002, 0o100000)) | st.integers(0, 2**32 - 1)
_open = st.builds(lambda fid, mode: ("open", fid, mode), _fids, _modes)
_offsets = st.sampled_from((0, 0, 1, 5, 20, 59, 60, 1000, 8168, 8169, BIG)) | st.integers(0, 2**64 - 1)
_counts = st.sampled_from((0, 1, 3, 8192, 9000, 2**32 - 1)) | st.integers(0, 2**32 - 1)
_read = st.builds(lambda fid, offset, count: ("read", fid, offset, count), _fids, _offsets, _counts)
_write = st.builds(lambda fid, data: ("write", fid, data), _fids, st.sampled_from((b"echo hi\n", b"line\n", b"x" * 10, b"")))
_clunk = st.builds(lambda fid: ("clunk", fid), _fids)
_request = st.one_of(_walk, _open, _read, _write, _clunk)
# What a client mostly sends: a walk from the root to a file, its open as the file is meant to be opened
# (or not), reads or writes of it, its clunk.
_USES = [(path, mode) for path, modes in (
    (("status",), (0,)), (("dir", "a", "status"), (0,)), (("big",), (0,)), (("broken",), (0,)), (("events",), (0,)),
    (("notes",), (0, 2)), (("ctl",), (1, 2)), (("in",), (1,)), (("slow",), (1,)), (("mail",), (1, 2)), (("dir",), (0,)))
    for mode in modes]
_usual = st.sampled_from(_USES).map(lambda use: ([name.encode() for name in use[0]], use[1]))
_middle = st.lists(st.tuples(_offsets, _counts) | st.sampled_from((b"echo hi\n", b"line\n")), max_size=3)
_use = st.builds(lambda fid, target, middle, clunk: [
    ("walk", ROOT, fid, target[0]), ("open", fid, target[1]),
    *(("write", fid, part) if isinstance(part, bytes) else ("read", fid, *part) for part in middle),
    *([("clunk", fid)] if clunk else [])],
    st.sampled_from((1, 2, 3)), _usual | st.tuples(_paths, _modes), _middle, st.booleans())
_mangle = st.sampled_from((None, None, None, None, None, None, "long", "short"))
def _plain(*requests: tuple) -> list[tuple[tuple, None]]:
    return [(request, None) for request in requests]


_batch = st.lists(st.tuples(_request, _mangle), min_size=1, max_size=4) | _use.map(lambda rs: [(r, None) for r in rs])


def frame_of(request: tuple, tag: int, dialect: Dialect) -> bytes:
    kind, fid, *rest = request
    codec = codec_for(dialect)
    if kind == "walk":
        newfid, names = rest
        body = struct.pack("<IIH", fid, newfid, len(names)) + b"".join(struct.pack("<H", len(n)) + n for n in names)
        return _HEAD.pack(7 + len(body), m.Twalk.TYPE, tag) + body
    if kind == "open":  # the dialect's open; the modes are Linux flags and 9P modes alike, cut to a byte for Topen
        if dialect is Dialect.P2000L:
            return codec.encode(m.Tlopen(tag=tag, fid=fid, flags=rest[0]))
        return codec.encode(m.Topen(tag=tag, fid=fid, mode=rest[0] & 0xFF))
    if kind == "read":
        return codec.encode(m.Tread(tag=tag, fid=fid, offset=rest[0], count=rest[1]))
    if kind == "write":
        return codec.encode(m.Twrite(tag=tag, fid=fid, offset=0, data=rest[0]))
    return codec.encode(m.Tclunk(tag=tag, fid=fid))


def mangled(frame: bytes, how: str | None) -> bytes:
    """The frame a byte longer or shorter than its type's layout (its size field agreeing)."""
    if how == "long":
        frame += b"\0"
    elif how == "short" and len(frame) > 7:
        frame = frame[:-1]
    return struct.pack("<I", len(frame)) + frame[4:]


# ---------------------------------------------------------------- the two servers


class Served:
    """One connection over its own tree, fed frames; the replies come back as bytes."""

    def __init__(self, nursery: trio.Nursery, hot: bool):
        self.root, self.submitted = tree()
        self.errors: list[tuple[str, str]] = []
        client, server = trio.testing.memory_stream_pair()
        self.conn = Connection(server, self.root, hot_path=hot, on_error=lambda where, text: self.errors.append((where, text)))
        nursery.start_soon(self.conn.serve)
        self.client = client
        self.frames = FrameBuffer(Limits().max_msize)

    async def exchange(self, frames: list[bytes]) -> list[bytes]:
        await self.client.send_all(b"".join(frames))
        replies = []
        with within(10, f"{len(frames)} replies"):
            while len(replies) < len(frames):
                while (frame := self.frames.next_frame()) is None:
                    self.frames.feed(await self.client.receive_some(1 << 16))
                replies.append(frame)
        return replies

    def state(self) -> dict:
        fids = self.conn.dispatcher.fids.by_number
        return {"fids": {n: ([node.key for node in f.trail], f.handle is None, f.can_read, f.can_write, f.listing is None)
                         for n, f in fids.items()},
                "collected": self.conn.dispatcher.collected.held,
                "snapshot bytes": self.conn.dispatcher.snapshots.held_bytes,
                "submitted": self.submitted, "errors": self.errors}


async def conversation(dialect: Dialect, batches: list[list[tuple[tuple, str | None]]]) -> None:
    p2000 = codec_for(Dialect.P2000)
    hello = [p2000.encode(m.Tversion(tag=0xFFFF, msize=8192, version=dialect.value)),
             codec_for(dialect).encode(m.Tattach(tag=1, fid=ROOT, afid=NOFID, uname="me", aname="", n_uname=1000))]
    async with trio.open_nursery() as nursery:
        hot, plain = Served(nursery, hot=True), Served(nursery, hot=False)
        assert await hot.exchange(hello) == await plain.exchange(hello)
        tag = 10
        for batch in batches:
            frames = []
            for request, how in batch:
                frames.append(mangled(frame_of(request, tag, dialect), how))
                tag += 1
            assert await hot.exchange(frames) == await plain.exchange(frames), batch
            assert hot.state() == plain.state(), batch
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("dialect", [Dialect.P2000L, Dialect.P2000, Dialect.P2000U])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(_batch, max_size=12))
@example(batches=[_plain(("walk", ROOT, 1, [b"mail"]), ("open", 1, 2), ("write", 1, b"line\n"), ("read", 1, 0, 100))])
@example(batches=[_plain(("walk", ROOT, 1, []), ("walk", ROOT, 1, [b"status"]), ("walk", 1, 1, [b"..", b"dir"]))])
@example(batches=[_plain(("walk", ROOT, 1, [b"big"]), ("open", 1, 0), ("read", 1, 0, 2**32 - 1), ("read", 1, BIG - 3, 9),
                         ("walk", ROOT, 2, [b"events"]), ("open", 2, 0), ("read", 2, 7, 100), ("clunk", 2))])
def test_the_hot_path_answers_as_the_message_path(dialect: Dialect, batches) -> None:
    trio.run(conversation, dialect, batches)


def test_a_usual_poll_is_answered_on_the_hot_path(monkeypatch) -> None:
    """The test above would pass with a hot path that always declined: here its answers are counted."""
    answered: list[str] = []
    for name in ("walk", "lopen", "read", "clunk"):
        real = getattr(HotPath, name)

        def counted(self, frame, real=real, name=name):
            reply = real(self, frame)
            if reply is not None:
                answered.append(name)
            return reply
        monkeypatch.setattr(HotPath, name, counted)
    poll = [("walk", ROOT, 1, [b"dir", b"a", b"status"]), ("open", 1, 0), ("read", 1, 0, 8192), ("read", 1, 7, 8192),
            ("clunk", 1), ("walk", ROOT, 2, [b"nope"]), ("read", 2, 0, 10)]
    trio.run(conversation, Dialect.P2000L, [[(request, None)] for request in poll])
    # only the first connection has a hot path; the missing name and the read of fid 2 it declined
    assert answered == ["walk", "lopen", "read", "read", "clunk"]
