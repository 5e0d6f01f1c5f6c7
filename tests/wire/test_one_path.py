"""Every request takes one path, whichever way its frame is read.

A frame is read one of two ways (server/connection.py): while nothing is
pending, the dialect's field reader hands its fields straight to the
handler; while a request is pending, or under a trace, it is decoded into a
message first, for the sans-IO core's rules on tags and fids, and then its
fields go to the same handler. Hypothesis draws batches of requests (walks
that reach their end, stop short, meet `..`, `.` or an empty name; opens in
every mode; reads at any offset, of files and directories; clunks, stats,
getattrs; fids that are there or not; frames cut short or with bytes left
over) and feeds the same batches to a connection read the first way and one
read the second: every reply, and the fids left, must be the same. Then the
usual poll must be answered without a message being built.
"""

from __future__ import annotations

import struct

import pytest
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import Dialect, codec_for
from anvilfs.ninep import messages as m
from anvilfs.ninep.consts import NOFID
from anvilfs.server import Connection, Limits
from anvilfs.tree import Command, CommandTable, CtlFile, Directory, TextFile

ROOT = 0
NAMES = ("dir", "status", "ctl", "a", "nope", "..", ".", "")
LIMITS = Limits(max_fids=6)  # the fid limit within reach


def _tree() -> Directory:
    table = CommandTable([Command("ping", lambda args: None, "ping")])
    return Directory("/", "/", [
        TextFile("status", "status", lambda: "idle\n"),
        CtlFile("ctl", "ctl", table, readable=True),
        Directory("dir", "dir", [Directory("a", "dir/a", [TextFile("status", "dir/a/status", lambda: "busy\n")])]),
    ])


class _Fed:
    """A connection fed batches in-process (as benchmarks/inproc.py feeds one), its replies kept."""

    def __init__(self, traced: bool, dialect: Dialect, tree: Directory | None = None):
        stream, _ = trio.testing.memory_stream_pair()
        self.conn = Connection(stream, tree or _tree(), limits=LIMITS, trace=(lambda text: None) if traced else None)
        self.feed(codec_for(Dialect.P2000).encode(m.Tversion(tag=0xFFFF, msize=8192, version=dialect.value)))
        self.feed(codec_for(dialect).encode(m.Tattach(tag=1, fid=ROOT, uname="t", aname="")))

    def feed(self, data: bytes) -> bytes:
        self.conn._handle_frames(data)
        replies = bytes(self.conn._out)
        self.conn._out.clear()
        return replies


def _requests(dialect: Dialect):
    fid = st.integers(0, 7) | st.just(NOFID)
    open_ = (st.builds(m.Tlopen, tag=st.just(2), fid=fid, flags=st.sampled_from((0, 1, 2, 0o1000)))
             if dialect.is_l else st.builds(m.Topen, tag=st.just(2), fid=fid, mode=st.sampled_from((0, 1, 2, 3, 16, 0x40))))
    stat = (st.builds(m.Tgetattr, tag=st.just(3), fid=fid, request_mask=st.just(0x7FF))
            if dialect.is_l else st.builds(m.Tstat, tag=st.just(3), fid=fid))
    return st.one_of(
        st.builds(m.Twalk, tag=st.just(1), fid=fid, newfid=fid,
                  wnames=st.lists(st.sampled_from(NAMES), max_size=3).map(tuple)),
        open_, stat,
        st.builds(m.Tread, tag=st.just(4), fid=fid, offset=st.sampled_from((0, 2, 5, 100)), count=st.sampled_from((0, 3, 9000))),
        st.builds(m.Twrite, tag=st.just(5), fid=fid, offset=st.just(0), data=st.sampled_from((b"ping\n", b"bad\n"))),
        st.builds(m.Tclunk, tag=st.just(6), fid=fid),
    )


def _spoiled(frame: bytes, how: int) -> bytes:
    """The frame as sent, or cut short, or with a byte left over (its size field made to agree)."""
    if how == 1 and len(frame) > 7:
        frame = frame[:-1]
    elif how == 2:
        frame += b"\0"
    else:
        return frame
    return struct.pack("<I", len(frame)) + frame[4:]


@pytest.mark.parametrize("dialect", [Dialect.P2000, Dialect.P2000L])
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_frame_is_answered_alike_delivered_straight_or_decoded_first(dialect: Dialect, data) -> None:
    tree = _tree()  # one for both: a node's mtime is the second it was made, and two trees may straddle one
    straight, decoded = _Fed(False, dialect, tree), _Fed(True, dialect, tree)
    codec = codec_for(dialect)
    for _ in range(data.draw(st.integers(1, 4))):
        batch = data.draw(st.lists(st.tuples(_requests(dialect), st.sampled_from((0, 0, 0, 1, 2))), min_size=1, max_size=6))
        frames = b"".join(_spoiled(codec.encode(msg), how) for msg, how in batch)
        assert straight.feed(frames) == decoded.feed(frames), [msg for msg, _ in batch]
        assert straight.conn.dispatcher.fids.by_number.keys() == decoded.conn.dispatcher.fids.by_number.keys()


class _NoDecoding:
    """A connection's codec that fails the test if a frame is decoded into a message."""

    def decode(self, frame: bytes):
        pytest.fail(f"a message was decoded from {bytes(frame)!r}")


def test_the_usual_poll_builds_no_message(monkeypatch) -> None:
    """Walk, Tlopen, Tread, Tgetattr and Tclunk of a status file: no request message is decoded, and
    each reply is the one the message would have had."""
    fed = _Fed(False, Dialect.P2000L)
    codec = codec_for(Dialect.P2000L)
    monkeypatch.setattr(fed.conn, "_codec", _NoDecoding())
    polls = [m.Twalk(tag=1, fid=ROOT, newfid=1, wnames=("dir", "a", "status")), m.Tlopen(tag=2, fid=1, flags=0),
             m.Tread(tag=3, fid=1, offset=0, count=100), m.Tgetattr(tag=4, fid=1, request_mask=0x7FF),
             m.Tclunk(tag=5, fid=1)]
    replies = fed.feed(b"".join(codec.encode(msg) for msg in polls))
    monkeypatch.undo()
    got = []
    while replies:
        size = struct.unpack_from("<I", replies)[0]
        got.append(codec.decode(replies[:size]))
        replies = replies[size:]
    assert [type(r) for r in got] == [m.Rwalk, m.Rlopen, m.Rread, m.Rgetattr, m.Rclunk]
    assert len(got[0].wqids) == 3 and got[2].data == b"busy\n" and got[3].size == 5
    assert not fed.conn.dispatcher.fids.by_number.keys() - {ROOT}
