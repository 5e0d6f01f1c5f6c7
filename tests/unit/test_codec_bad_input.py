"""What the codec does with bytes that break the protocol, and with values it cannot encode.

Decoding: every malformed frame is a BadMessage (carrying the tag once the
header could be read), never another exception, so the server can answer
that one request and keep the connection.
Encoding: a value the wire cannot express is a LocalProtocolError.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import codec, messages as m
from anvilfs.ninep.consts import Dialect
from anvilfs.ninep.errors import BadMessage, LocalProtocolError
from anvilfs.ninep.fields import Qid, Stat
from strategies import DIALECTS, dialect_and_message

P2000, P2000U, P2000L = Dialect.P2000, Dialect.P2000U, Dialect.P2000L
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def frame(type_id: int, tag: int, body: bytes) -> bytes:
    return struct.pack("<IBH", 7 + len(body), type_id, tag) + body


def s(text: bytes) -> bytes:
    return struct.pack("<H", len(text)) + text


def resize(raw: bytes, body: bytes) -> bytes:
    """raw's header with a new body and a size field that matches it."""
    return struct.pack("<I", 7 + len(body)) + raw[4:7] + body


# ---------------------------------------------------------------- header-level problems

@pytest.mark.parametrize("raw", [b"", b"\x07\x00\x00", b"\x07\x00\x00\x00\x78\x01"])
def test_frame_shorter_than_a_header(raw):
    with pytest.raises(BadMessage, match="shorter than a header") as info:
        codec.decode(raw, P2000)
    assert info.value.tag is None


@pytest.mark.parametrize("delta", [-1, 1, 1000])
def test_size_field_that_does_not_match_the_frame(delta):
    good = codec.encode(m.Tclunk(tag=9, fid=3), P2000)
    bad = struct.pack("<I", len(good) + delta) + good[4:]
    with pytest.raises(BadMessage, match="size field") as info:
        codec.decode(bad, P2000)
    assert info.value.tag == 9


@pytest.mark.parametrize("type_id", [0, 1, 6, 10, 106, 128, 200, 255])
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_unknown_type_numbers(type_id, dialect):
    assert type_id not in m.MESSAGE_TYPES
    with pytest.raises(BadMessage, match="unknown message type") as info:
        codec.decode(frame(type_id, 77, b"\x00" * 8), dialect)
    assert info.value.tag == 77
    assert info.value.type_id == type_id


# ---------------------------------------------------------------- body-level problems

@FAST
@given(dialect_and_message(), st.data())
def test_truncated_body_is_bad_message_with_tag(case, data):
    dialect, msg = case
    good = codec.encode(msg, dialect)
    if len(good) == 7:  # nothing to cut: Rflush, Rclunk, ...
        return
    cut = data.draw(st.integers(7, len(good) - 1), label="keep")
    with pytest.raises(BadMessage) as info:
        codec.decode(resize(good, good[7:cut]), dialect)
    assert info.value.tag == msg.tag


@FAST
@given(dialect_and_message(), st.binary(min_size=1, max_size=16))
def test_bytes_left_over_is_bad_message_with_tag(case, junk):
    dialect, msg = case
    good = codec.encode(msg, dialect)
    with pytest.raises(BadMessage) as info:
        codec.decode(resize(good, good[7:] + junk), dialect)
    assert info.value.tag == msg.tag
    assert info.value.type_id == msg.TYPE


def test_left_over_bytes_message_names_the_class():
    good = codec.encode(m.Tclunk(tag=1, fid=2), P2000)
    with pytest.raises(BadMessage, match=r"2 bytes left over after Tclunk"):
        codec.decode(resize(good, good[7:] + b"xx"), P2000)


@pytest.mark.parametrize("bad", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"ok\x80"])
def test_invalid_utf8_in_a_string(bad):
    raw = frame(100, 5, struct.pack("<I", 8192) + s(bad))
    with pytest.raises(BadMessage, match="version is not valid UTF-8") as info:
        codec.decode(raw, P2000)
    assert info.value.tag == 5


def test_invalid_utf8_in_a_walk_name():
    body = struct.pack("<IIH", 1, 2, 2) + s(b"ok") + s(b"\xfe")
    with pytest.raises(BadMessage, match="UTF-8") as info:
        codec.decode(frame(110, 6, body), P2000)
    assert info.value.tag == 6


def test_invalid_utf8_in_a_stat_name():
    stat = bytearray(codec.encode_stat(Stat(name="abc"), P2000))
    at = stat.index(b"abc")
    stat[at] = 0xFF
    with pytest.raises(BadMessage, match="UTF-8") as info:
        codec.decode(frame(125, 8, s(bytes(stat))), P2000)
    assert info.value.tag == 8


def test_string_length_past_the_end():
    raw = frame(100, 3, struct.pack("<IH", 8192, 50) + b"9P2000")
    with pytest.raises(BadMessage, match="ends inside version") as info:
        codec.decode(raw, P2000)
    assert info.value.tag == 3


def test_walk_count_past_the_end():
    raw = frame(111, 4, struct.pack("<H", 3) + b"\x00" * 13)  # 3 qids promised, 1 given
    with pytest.raises(BadMessage, match="ends inside wqids") as info:
        codec.decode(raw, P2000)
    assert info.value.tag == 4


# ---------------------------------------------------------------- stat sizes

@pytest.mark.parametrize("delta", [-1, 1])
def test_stat_size_mismatch_inside_rstat(delta):
    stat = codec.encode_stat(Stat(name="x"), P2000)
    wrong = struct.pack("<H", len(stat) - 2 + delta) + stat[2:]
    with pytest.raises(BadMessage, match="stat size") as info:
        codec.decode(frame(125, 12, s(wrong)), P2000)
    assert info.value.tag == 12


def test_rstat_count_that_disagrees_with_the_stat():
    stat = codec.encode_stat(Stat(), P2000)
    body = struct.pack("<H", len(stat) + 3) + stat + b"\x00\x00\x00"
    with pytest.raises(BadMessage, match="stat size"):
        codec.decode(frame(125, 1, body), P2000)


@pytest.mark.parametrize("delta", [-1, 1])
def test_decode_stat_size_mismatch(delta):
    raw = codec.encode_stat(Stat(name="x"), P2000)
    wrong = struct.pack("<H", len(raw) - 2 + delta) + raw[2:]
    with pytest.raises(BadMessage, match="stat size") as info:
        codec.decode_stat(wrong, P2000)
    assert info.value.tag is None


# A stat's size[2] must cover exactly its fields (plan9 statcheck: buf != ebuf
# is an error); before commit fb4b9f5 bytes inside the size that no field
# reads were silently ignored.

@settings(max_examples=50, deadline=None)
@given(st.sampled_from(DIALECTS), st.binary(min_size=1, max_size=8))
def test_stat_with_bytes_left_over_inside_its_size(dialect, junk):
    raw = codec.encode_stat(Stat(name="x"), dialect)
    padded = struct.pack("<H", len(raw) - 2 + len(junk)) + raw[2:] + junk
    with pytest.raises(BadMessage):
        codec.decode_stat(padded, dialect)
    with pytest.raises(BadMessage) as info:
        codec.decode(frame(125, 13, s(padded)), dialect)
    assert info.value.tag == 13


def test_dotu_stat_read_as_plain_9p2000_is_rejected():
    raw = codec.encode_stat(Stat(name="x", extension="e"), P2000U)
    with pytest.raises(BadMessage):
        codec.decode_stat(raw, P2000)


# ---------------------------------------------------------------- nothing but BadMessage

def _decodes_or_bad_message(raw: bytes, dialect: Dialect) -> None:
    try:
        msg = codec.decode(raw, dialect)
    except BadMessage:
        return
    assert isinstance(msg, m.Message)
    assert codec.encode(msg, dialect) == bytes(raw)  # what decodes re-encodes exactly


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(DIALECTS), st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_bad_message(dialect, raw):
    _decodes_or_bad_message(raw, dialect)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(DIALECTS),
    st.sampled_from(sorted(m.MESSAGE_TYPES)),
    st.integers(0, 0xFFFF),
    st.binary(max_size=64),
)
def test_arbitrary_bodies_of_known_types(dialect, type_id, tag, body):
    _decodes_or_bad_message(frame(type_id, tag, body), dialect)


@FAST
@given(dialect_and_message(), st.data())
def test_corrupted_valid_frames(case, data):
    dialect, msg = case
    raw = bytearray(codec.encode(msg, dialect))
    if len(raw) == 7:
        return
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        at = data.draw(st.integers(7, len(raw) - 1), label="at")
        raw[at] = data.draw(st.integers(0, 255), label="byte")
    _decodes_or_bad_message(bytes(raw), dialect)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DIALECTS), st.binary(max_size=80))
def test_decode_stat_of_arbitrary_bytes(dialect, raw):
    try:
        stat = codec.decode_stat(raw, dialect)
    except BadMessage:
        return
    assert codec.encode_stat(stat, dialect) == raw


# ---------------------------------------------------------------- values that cannot be encoded

@pytest.mark.parametrize(
    "msg",
    [
        m.Tversion(tag=1, msize=2**32, version="9P2000"),
        m.Tversion(tag=1, msize=-1, version="9P2000"),
        m.Tflush(tag=1, oldtag=0x10000),
        m.Topen(tag=1, fid=1, mode=256),
        m.Tversion(tag=0x10000, msize=8192, version="9P2000"),
        m.Tversion(tag=1, msize=8192, version="x" * 0x10000),
    ],
    ids=["u32-overflow", "negative", "u16-overflow", "u8-overflow", "tag", "long-string"],
)
def test_unencodable_scalars_are_local_protocol_errors(msg):
    with pytest.raises(LocalProtocolError):
        codec.encode(msg, P2000)


# Counts, qids, stat sizes and strings without a UTF-8 form cannot go on the
# wire either (before commit fb4b9f5 these escaped as struct.error and
# UnicodeEncodeError).

def test_qid_out_of_range_is_a_local_protocol_error():
    with pytest.raises(LocalProtocolError):
        codec.encode(m.Rattach(tag=1, qid=Qid(0x100, 0, 0)), P2000)


def test_too_many_walk_names_is_a_local_protocol_error():
    with pytest.raises(LocalProtocolError):
        codec.encode(m.Twalk(tag=1, fid=1, newfid=2, wnames=("a",) * 0x10000), P2000)


def test_stat_longer_than_65535_bytes_is_a_local_protocol_error():
    big = Stat(name="n" * 30000, uid="u" * 30000, gid="g" * 30000)
    with pytest.raises(LocalProtocolError):
        codec.encode(m.Rstat(tag=1, stat=big), P2000)


def test_string_without_utf8_form_is_a_local_protocol_error():
    with pytest.raises(LocalProtocolError):
        codec.encode(m.Tversion(tag=1, msize=8192, version="\ud800"), P2000)


@pytest.mark.parametrize("value", [None, "7", 1.5])
def test_wrong_python_type_is_a_local_protocol_error_naming_the_field(value):
    with pytest.raises(LocalProtocolError, match="Tclunk.fid"):
        codec.encode(m.Tclunk(tag=1, fid=value), P2000)
