"""Differential (from review): the compiled per-dialect codec (Codec.decode/encode) against the
generic field-by-field codec (_decode_fields/_encode_fields). They must agree on
every input: the same message (same field types) or the same error."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from anvilfs.ninep import Dialect, codec
from anvilfs.ninep import messages as m
from anvilfs.ninep.codec import Codec, _decode_fields, _encode_fields, frame_maker
from anvilfs.ninep.compiled import constructor
from anvilfs.ninep.errors import BadMessage, LocalProtocolError
from strategies import DIALECTS, dialect_and_message, message_strategy, wire_fields

SET = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


def _outcome(fn, *args):
    try:
        value = fn(*args)
    except (BadMessage, LocalProtocolError) as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "tag", None))
    except Exception as exc:  # anything else is a bug in itself
        return ("crash", type(exc).__name__, str(exc))
    if isinstance(value, bytes):
        return ("ok", value)
    return ("ok", type(value), tuple((f.name, type(getattr(value, f.name)), getattr(value, f.name))
                                   for f in dataclasses.fields(value)))


def _mutations(raw: bytes):
    return st.one_of(
        st.just(raw),
        st.integers(0, len(raw)).map(lambda n: raw[:n]),                              # truncated
        st.binary(min_size=1, max_size=8).map(lambda b: raw + b),                      # trailing bytes
        st.binary(min_size=1, max_size=8).map(lambda b: struct.pack("<I", len(raw) + len(b)) + raw[4:] + b),
        st.tuples(st.integers(0, max(len(raw) - 1, 0)), st.integers(0, 255)).map(
            lambda t: raw[:t[0]] + bytes([t[1]]) + raw[t[0] + 1:] if raw else raw),     # one byte changed
        st.tuples(st.integers(7, max(len(raw) - 1, 7)), st.integers(0, 255)).map(      # body byte, size kept
            lambda t: raw[:t[0]] + bytes([t[1]]) + raw[t[0] + 1:] if len(raw) > t[0] else raw),
        st.integers(0, 255).map(lambda t: raw[:4] + bytes([t]) + raw[5:] if len(raw) >= 5 else raw),  # type id
    )


@SET
@given(st.data())
def test_decode_agrees(data):
    dialect, msg = data.draw(dialect_and_message())
    other = data.draw(st.sampled_from(DIALECTS))  # sometimes decoded in another dialect
    raw = codec._encode_fields(msg, dialect)
    frame = data.draw(_mutations(raw))
    fast = Codec(other)
    assert _outcome(fast.decode, frame) == _outcome(_decode_fields, frame, other)
    # and once the type is compiled (the second sight of a type id)
    assert _outcome(fast.decode, frame) == _outcome(_decode_fields, frame, other)
    assert _outcome(codec.codec_for(other).decode, frame) == _outcome(_decode_fields, frame, other)


@SET
@given(st.sampled_from(DIALECTS), st.binary(max_size=64), st.integers(0, 255))
def test_decode_random_bodies(dialect, body, type_id):
    frame = struct.pack("<IBH", 7 + len(body), type_id, 1) + body
    c = Codec(dialect)
    assert _outcome(c.decode, frame) == _outcome(_decode_fields, frame, dialect)
    assert _outcome(c.decode, frame) == _outcome(_decode_fields, frame, dialect)


_BAD = st.one_of(st.none(), st.just(-1), st.just(1.5), st.just(2 ** 64), st.just(0x10000), st.just(2 ** 32),
                 st.just("x"), st.just("\ud800"), st.just("é" * 40000), st.just(b"ab"), st.just(bytearray(b"ab")),
                 st.just(memoryview(b"ab")), st.just([1, 2]), st.just(("a", "\ud800")), st.just(("a", 1)),
                 st.just(True), st.just(()), st.just(("é" * 40000,)))


@SET
@given(st.data())
def test_encode_agrees(data):
    dialect, msg = data.draw(dialect_and_message())
    fields = [f for f in wire_fields(type(msg))]
    for f in data.draw(st.lists(st.sampled_from(fields), max_size=2)):
        object.__setattr__(msg, f.name, data.draw(_BAD))
    enc_dialect = data.draw(st.sampled_from(DIALECTS))
    fast = Codec(enc_dialect)
    assert _outcome(fast.encode, msg) == _outcome(_encode_fields, msg, enc_dialect)
    assert _outcome(fast.encode, msg) == _outcome(_encode_fields, msg, enc_dialect)


@SET
@given(dialect_and_message())
def test_constructor_builds_what_init_builds(dialect_message):
    """compiled.constructor, the positional maker the server builds its hot replies with, makes an
    equal, equally frozen message from the same values."""
    _, msg = dialect_message
    cls = type(msg)
    made = constructor(cls)(*(getattr(msg, name) for name in cls.FIELDS))
    assert type(made) is cls and made == msg and repr(made) == repr(msg)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.tag = 1


_FRAMED = (m.Rwalk, m.Ropen, m.Rlopen, m.Rread, m.Rclunk)  # the replies server/dispatch.py sends as frames


@SET
@given(st.data())
def test_frame_maker_makes_what_the_encoder_makes(data):
    """codec.frame_maker, which the server makes its hot replies with: from the same values, the frame
    every dialect's generic encoder makes of the message; for values that do not fit, the message
    itself, which the codec then refuses as it would have."""
    cls = data.draw(st.sampled_from(_FRAMED))
    msg = data.draw(message_strategy(cls, Dialect.P2000L))
    for f in data.draw(st.lists(st.sampled_from(wire_fields(cls)), max_size=2)):
        object.__setattr__(msg, f.name, data.draw(_BAD))
    made = frame_maker(cls)(*(getattr(msg, name) for name in cls.FIELDS))
    outcomes = {_outcome(_encode_fields, msg, d) for d in DIALECTS}
    assert len(outcomes) == 1, outcomes  # laid out alike in every dialect: one frame serves them all
    if isinstance(made, bytes):
        assert ("ok", made) in outcomes
    else:
        assert made == msg and outcomes.pop()[0] == "error", (made, outcomes)


def test_frame_maker_refuses_a_class_laid_out_by_dialect():
    with pytest.raises(ValueError, match="differently by dialect"):
        frame_maker(m.Rerror)  # its errno is 9P2000.u's


@SET
@given(st.data())
def test_field_reader_reads_what_the_decoder_decodes(data):
    """Codec.fields, which the server hands each request's fields to its handler with: for every frame,
    well formed or spoiled, the decoded message's fields (tag first, a field the dialect lacks at its
    default), or a raise exactly where the generic decoder refuses the frame."""
    dialect, msg = data.draw(dialect_and_message())
    frame = data.draw(_mutations(codec._encode_fields(msg, dialect)))
    if len(frame) < 7 or struct.unpack_from("<I", frame)[0] != len(frame) or frame[4] != msg.TYPE:
        return  # the frame buffer hands out whole frames only, and the server picks the reader by type
    expected = _outcome(_decode_fields, frame, dialect)
    try:
        got = ("ok", Codec(dialect).fields(type(msg))(frame))
    except Exception as exc:  # NotWellFormed, struct.error or BadMessage: the decoder then names it
        assert expected[0] == "error", (frame, exc, expected)
        return
    assert expected[0] == "ok", (frame, got, expected)
    assert got[1] == tuple(value for _, _, value in expected[2]), (frame, got, expected)
