"""FrameBuffer: splitting a byte stream into 9P frames, whatever the chunking."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvilfs.ninep import codec, messages as m
from anvilfs.ninep.consts import Dialect
from anvilfs.ninep.errors import FramingError
from anvilfs.ninep.framing import FrameBuffer
from strategies import dialect_and_message


def raw_frame(body: bytes, type_id: int = 117, tag: int = 1) -> bytes:
    return struct.pack("<IBH", 7 + len(body), type_id, tag) + body


FRAMES = [
    codec.encode(m.Tversion(tag=0xFFFF, msize=8192, version="9P2000"), Dialect.P2000),
    codec.encode(m.Rflush(tag=3), Dialect.P2000),  # header only: 7 bytes
    codec.encode(m.Rread(tag=4, data=b"x" * 100), Dialect.P2000),
    codec.encode(m.Twalk(tag=5, fid=1, newfid=2, wnames=("agent", "list")), Dialect.P2000),
]


def test_byte_by_byte():
    stream = b"".join(FRAMES)
    buf = FrameBuffer(max_size=8192)
    got = []
    boundaries = {sum(len(f) for f in FRAMES[: i + 1]) for i in range(len(FRAMES))}
    for i in range(len(stream)):
        buf.feed(stream[i:i + 1])
        out = buf.frames()
        if i + 1 in boundaries:
            assert len(out) == 1
        else:
            assert out == []
        got += out
        # pending is what was fed and not yet handed out as a frame
        assert buf.pending == i + 1 - sum(len(f) for f in got)
    assert got == FRAMES
    assert buf.pending == 0
    assert buf.next_frame() is None


def test_several_frames_in_one_feed_come_out_in_order():
    buf = FrameBuffer(max_size=8192)
    buf.feed(b"".join(FRAMES) + FRAMES[0][:5])
    assert buf.next_frame() == FRAMES[0]
    assert buf.frames() == FRAMES[1:]
    assert buf.pending == 5
    buf.feed(FRAMES[0][5:])
    assert buf.frames() == [FRAMES[0]]
    assert buf.pending == 0


def test_fewer_than_four_bytes_wait():
    buf = FrameBuffer(max_size=8192)
    buf.feed(b"\x00\x00\x00")  # not even a size field: nothing to judge yet
    assert buf.next_frame() is None
    assert buf.pending == 3


@given(
    frames=st.lists(
        st.one_of(
            dialect_and_message().map(lambda dm: codec.encode(dm[1], dm[0])),
            st.binary(max_size=300).map(raw_frame),
        ),
        max_size=12,
    ),
    data=st.data(),
)
@settings(max_examples=150, deadline=None)
def test_random_chunkings(frames, data):
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20), label="cuts"))
    buf = FrameBuffer(max_size=max([7, *map(len, frames)]))
    got = []
    fed = 0
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        buf.feed(stream[start:end])
        fed += end - start
        got += buf.frames()
        assert buf.pending == fed - sum(map(len, got))
    assert got == frames
    assert buf.pending == 0


def test_long_stream_past_the_compaction_point():
    """Many frames through one buffer (well over 64 KiB) keep their order and bytes."""
    frames = [raw_frame(bytes([i % 256]) * (i * 37 % 900), tag=i) for i in range(600)]
    stream = b"".join(frames)
    assert len(stream) > 3 * 65536
    buf = FrameBuffer(max_size=1024)
    got = []
    step = 5000
    for at in range(0, len(stream), step):
        buf.feed(stream[at:at + step])
        while (f := buf.next_frame()) is not None:
            got.append(f)
    assert got == frames
    assert buf.pending == 0


@pytest.mark.parametrize("size", [0, 1, 4, 6])
def test_size_smaller_than_a_header_is_a_framing_error(size):
    buf = FrameBuffer(max_size=8192)
    buf.feed(struct.pack("<I", size) + b"\x00" * 10)
    with pytest.raises(FramingError, match=f"frame size {size} is smaller"):
        buf.next_frame()


def test_header_only_frame_is_fine():
    buf = FrameBuffer(max_size=8192)
    buf.feed(raw_frame(b"", type_id=109))
    assert buf.frames() == [raw_frame(b"", type_id=109)]


def test_size_larger_than_max_is_a_framing_error_before_the_body_arrives():
    buf = FrameBuffer(max_size=100)
    buf.feed(struct.pack("<I", 101))  # only the size field: no need to wait for 101 bytes
    with pytest.raises(FramingError, match="frame size 101 is larger than msize 100"):
        buf.next_frame()


def test_frame_of_exactly_max_size_is_accepted():
    frame = raw_frame(b"y" * 93)
    assert len(frame) == 100
    buf = FrameBuffer(max_size=100)
    buf.feed(frame)
    assert buf.frames() == [frame]


def test_bad_size_after_good_frames():
    buf = FrameBuffer(max_size=8192)
    buf.feed(FRAMES[0] + struct.pack("<I", 3) + b"\x00" * 3)
    assert buf.next_frame() == FRAMES[0]
    with pytest.raises(FramingError):
        buf.next_frame()


def test_frames_are_bytes_copies():
    buf = FrameBuffer(max_size=8192)
    buf.feed(FRAMES[2])
    frame = buf.next_frame()
    assert type(frame) is bytes
    buf.feed(FRAMES[3])  # reuse of the internal buffer must not change a frame handed out
    assert frame == FRAMES[2]
    assert buf.next_frame() == FRAMES[3]


@given(
    frames=st.lists(st.binary(max_size=40).map(raw_frame), min_size=1, max_size=10),
    data=st.data(),
)
@settings(max_examples=150, deadline=None)
def test_bytes_and_bytearray_feeds_in_any_mix_and_any_drain(frames, data):
    """A feed of bytes onto an empty buffer is read in place (no copy); the frames are the same
    whether pieces come as bytes or bytearray and whether or not they are taken between feeds."""
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts"))
    buf = FrameBuffer(max_size=64)
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        piece = stream[start:end]
        buf.feed(bytearray(piece) if data.draw(st.booleans(), label="bytearray") else piece)
        if data.draw(st.booleans(), label="drain"):
            while (frame := buf.next_frame()) is not None:
                assert type(frame) is bytes
                got.append(frame)
    got += buf.frames()
    assert got == frames
    assert buf.pending == 0


def test_a_receive_of_whole_frames_is_handed_out_without_a_copy():
    buf = FrameBuffer(max_size=8192)
    buf.feed(FRAMES[2])
    assert buf.next_frame() is FRAMES[2]


@given(
    frames=st.lists(st.binary(max_size=40).map(raw_frame), min_size=1, max_size=10),
    data=st.data(),
)
@settings(max_examples=150, deadline=None)
def test_split_gives_the_frames_of_any_chunking_and_leaves_what_is_not_taken(frames, data):
    """split(data) is feed(data) and then the frames: the whole frames of any chunking come out in order,
    and a split left partly taken (the connection's unsent limit) gives the rest from the next split."""
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts"))
    buf = FrameBuffer(max_size=64)
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        for frame in buf.split(stream[start:end]):
            got.append(frame)
            if data.draw(st.booleans(), label="stop here"):
                break
    got += buf.split(b"")
    assert got == frames
    assert buf.pending == 0


def test_split_of_one_whole_frame_onto_nothing_pending_is_that_frame_unbuffered():
    buf = FrameBuffer(max_size=8192)
    assert list(buf.split(FRAMES[2])) == [FRAMES[2]] and next(iter(buf.split(FRAMES[2]))) is FRAMES[2]
    assert buf.pending == 0 and buf.next_frame() is None


def test_split_checks_sizes_as_next_frame_does():
    buf = FrameBuffer(max_size=64)
    with pytest.raises(FramingError, match="larger than msize 64"):
        list(buf.split(raw_frame(b"x" * 60)))  # one whole frame, but over the limit
    buf = FrameBuffer(max_size=64)
    with pytest.raises(FramingError, match="smaller than"):
        list(buf.split(struct.pack("<I", 5) + b"abc"))
