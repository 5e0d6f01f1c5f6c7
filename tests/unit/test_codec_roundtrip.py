"""encode/decode round trips for every message in every dialect, plus byte-exact vectors.

The strategies (tests/strategies.py) are generated from the message classes'
annotations, so a message added to messages.py is generated here too;
test_strategies_cover_every_message makes sure that stays so.
"""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import codec, messages as m
from anvilfs.ninep.consts import GETATTR_BASIC, NOFID, NONUNAME, NOTAG, Dialect
from anvilfs.ninep.errors import BadMessage
from anvilfs.ninep.fields import Kind, Qid, Stat
from strategies import (
    CASES,
    DIALECTS,
    STRATEGIES,
    case_id,
    dialect_and_message,
    present,
    value_strategy,
    wire_fields,
)

P2000, P2000U, P2000L = Dialect.P2000, Dialect.P2000U, Dialect.P2000L
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("case", CASES, ids=case_id)
@FAST
@given(data=st.data())
def test_decode_encode_round_trip(case, data):
    cls, dialect = case
    msg = data.draw(STRATEGIES[case])
    frame = codec.encode(msg, dialect)
    assert codec.decode(frame, dialect) == msg


def _field_size(kind: Kind, value, dialect: Dialect) -> int:
    """Bytes a field takes on the wire, written from the 9P manual pages."""
    fixed = {Kind.U8: 1, Kind.U16: 2, Kind.U32: 4, Kind.U64: 8, Kind.QID: 13}
    if kind in fixed:
        return fixed[kind]
    if kind is Kind.STR:
        return 2 + len(value.encode("utf-8"))
    if kind is Kind.DATA:
        return 4 + len(value)
    if kind is Kind.QIDS:
        return 2 + 13 * len(value)
    if kind is Kind.NAMES:
        return 2 + sum(2 + len(n.encode("utf-8")) for n in value)
    if kind is Kind.STAT:  # n[2], then the stat with its own size[2]
        return 2 + 2 + _body_size(Stat, value, dialect)
    raise AssertionError(kind)


def _body_size(cls, value, dialect: Dialect) -> int:
    return sum(
        _field_size(f.kind, getattr(value, f.name), dialect)
        for f in wire_fields(cls)
        if f.name != "tag" and present(f.only, dialect)
    )


@FAST
@given(dialect_and_message())
def test_frame_header_and_length(case):
    dialect, msg = case
    frame = codec.encode(msg, dialect)
    size, type_id, tag = struct.unpack_from("<IBH", frame)
    assert size == len(frame)
    assert type_id == msg.TYPE
    assert tag == msg.tag
    # only the fields present in the dialect take space, each its spec'd width
    assert len(frame) == 7 + _body_size(type(msg), msg, dialect)


@FAST
@given(dialect_and_message())
def test_fields_absent_from_dialect_stay_off_the_wire(case):
    dialect, msg = case
    stripped = dataclasses.replace(
        msg,
        **{f.name: f.default for f in wire_fields(type(msg)) if not present(f.only, dialect)},
    )
    assert codec.encode(msg, dialect) == codec.encode(stripped, dialect)
    assert codec.decode(codec.encode(msg, dialect), dialect) == stripped


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
@FAST
@given(data=st.data())
def test_stat_round_trip(dialect, data):
    stat = data.draw(value_strategy(Kind.STAT, dialect))
    raw = codec.encode_stat(stat, dialect)
    assert struct.unpack_from("<H", raw)[0] == len(raw) - 2
    assert codec.decode_stat(raw, dialect) == stat


DOTL_ONLY_CASES = [(cls, d) for cls, d in CASES if cls.TYPE in m.DOTL_ONLY and d is P2000L]


@pytest.mark.parametrize("case", DOTL_ONLY_CASES, ids=case_id)
@pytest.mark.parametrize("other", [P2000, P2000U], ids=lambda d: d.value)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_dotl_only_messages_are_unknown_in_other_dialects(case, other, data):
    msg = data.draw(STRATEGIES[case])
    frame = codec.encode(msg, P2000L)
    with pytest.raises(BadMessage) as info:
        codec.decode(frame, other)
    assert info.value.tag == msg.tag
    assert info.value.type_id == msg.TYPE


# ---------------------------------------------------------------- coverage of the strategies

def test_strategies_cover_every_message():
    covered = {(cls.TYPE, d) for cls, d in CASES}
    for type_id, cls in m.MESSAGE_TYPES.items():
        assert (type_id, P2000L) in covered, cls.__name__
        for d in (P2000, P2000U):
            assert ((type_id, d) in covered) == (type_id not in m.DOTL_ONLY), (cls.__name__, d)
    assert set(STRATEGIES) == set(CASES)
    # DOTL_ONLY is the 9P2000.L numbering (< 100), and nothing else
    assert m.DOTL_ONLY == {t for t in m.MESSAGE_TYPES if t < 100}
    assert {7, 12, 24, 26, 40, 77} <= m.DOTL_ONLY


@pytest.mark.parametrize("cls", [*m.MESSAGE_TYPES.values(), Stat], ids=lambda c: c.__name__)
def test_every_dataclass_field_is_a_wire_field(cls):
    """A field without a Kind annotation would silently never reach the wire."""
    declared = [f.name for f in dataclasses.fields(cls)]
    annotated = [f.name for f in wire_fields(cls)]
    assert annotated == declared


_NO_SHRINK = settings(max_examples=300, phases=[Phase.generate], database=None, deadline=None)


def _zero(kind: Kind):
    return {Kind.STR: "", Kind.DATA: b"", Kind.QID: Qid(0, 0, 0), Kind.QIDS: (),
            Kind.NAMES: (), Kind.STAT: Stat()}.get(kind, 0)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_strategies_vary_every_field_on_the_wire(case):
    """Each field present in the dialect is really drawn, not left at its default."""
    cls, dialect = case
    for f in wire_fields(cls):
        if not present(f.only, dialect):
            continue
        baseline = f.default if f.default is not dataclasses.MISSING else _zero(f.kind)
        found = find(STRATEGIES[case], lambda msg: getattr(msg, f.name) != baseline, settings=_NO_SHRINK)
        assert isinstance(found, cls)


# ---------------------------------------------------------------- byte-exact vectors

def _hex(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


TVERSION = _hex("13 00 00 00 64 ff ff 00 20 00 00 06 00 39 50 32 30 30 30")


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_tversion_vector(dialect):
    msg = m.Tversion(tag=NOTAG, msize=8192, version="9P2000")
    assert codec.encode(msg, dialect) == TVERSION
    assert codec.decode(TVERSION, dialect) == msg


def test_rerror_carries_errno_only_in_dotu():
    msg = m.Rerror(tag=1, ename="no", errno=2)
    plain = _hex("0b 00 00 00 6b 01 00 02 00 6e 6f")
    dotu = _hex("0f 00 00 00 6b 01 00 02 00 6e 6f 02 00 00 00")
    assert codec.encode(msg, P2000U) == dotu
    assert codec.decode(dotu, P2000U) == msg
    assert codec.encode(msg, P2000) == plain
    assert codec.decode(plain, P2000) == m.Rerror(tag=1, ename="no")
    with pytest.raises(BadMessage, match="left over"):
        codec.decode(dotu, P2000)


def test_rlerror_layout():
    frame = _hex("0b 00 00 00 07 05 00 02 00 00 00")
    assert codec.encode(m.Rlerror(tag=5, ecode=2), P2000L) == frame
    assert codec.decode(frame, P2000L) == m.Rlerror(tag=5, ecode=2)


def test_tattach_n_uname_only_in_dotu_and_dotl():
    msg = m.Tattach(tag=1, fid=0, afid=NOFID, uname="glenda", aname="", n_uname=1000)
    base = "00 00 00 00 ff ff ff ff 06 00 67 6c 65 6e 64 61 00 00"
    assert codec.encode(msg, P2000) == _hex("19 00 00 00 68 01 00" + base)
    for d in (P2000U, P2000L):
        frame = _hex("1d 00 00 00 68 01 00" + base + "e8 03 00 00")
        assert codec.encode(msg, d) == frame
        assert codec.decode(frame, d) == msg
    assert codec.decode(_hex("19 00 00 00 68 01 00" + base), P2000).n_uname == NONUNAME


def test_twalk_and_rwalk_vectors():
    twalk = m.Twalk(tag=2, fid=0, newfid=1, wnames=("a", "bc"))
    assert codec.encode(twalk, P2000) == _hex(
        "18 00 00 00 6e 02 00 00 00 00 00 01 00 00 00 02 00 01 00 61 02 00 62 63"
    )
    rwalk = m.Rwalk(tag=2, wqids=(Qid(0x80, 1, 0x0102030405060708),))
    assert codec.encode(rwalk, P2000) == _hex(
        "16 00 00 00 6f 02 00 01 00 80 01 00 00 00 08 07 06 05 04 03 02 01"
    )


def test_rread_and_tgetattr_vectors():
    assert codec.encode(m.Rread(tag=1, data=b"hi"), P2000) == _hex("0d 00 00 00 75 01 00 02 00 00 00 68 69")
    assert codec.encode(m.Tgetattr(tag=1, fid=1, request_mask=GETATTR_BASIC), P2000L) == _hex(
        "13 00 00 00 18 01 00 01 00 00 00 ff 07 00 00 00 00 00 00"
    )


def test_rstat_has_both_size_fields():
    """stat(5): Rstat carries n[2] and then the stat, which starts with its own size[2]."""
    msg = m.Rstat(tag=1, stat=Stat(name="f"))
    body = "00" * 39 + "01 00 66" + "00 00" * 3  # 48 bytes of stat fields
    plain = _hex("3b 00 00 00 7d 01 00" + "32 00" + "30 00" + body)
    assert codec.encode(msg, P2000) == plain
    assert codec.decode(plain, P2000) == msg
    dotu = _hex("49 00 00 00 7d 01 00" + "40 00" + "3e 00" + body + "00 00" + "ff" * 12)
    assert codec.encode(msg, P2000U) == dotu
    assert codec.decode(dotu, P2000U) == msg


def test_tauth_n_uname_only_in_dotu_and_dotl():
    msg = m.Tauth(tag=3, afid=9, uname="u", aname="", n_uname=7)
    base = "09 00 00 00 01 00 75 00 00"
    assert codec.encode(msg, P2000) == _hex("10 00 00 00 66 03 00" + base)
    for d in (P2000U, P2000L):
        assert codec.encode(msg, d) == _hex("14 00 00 00 66 03 00" + base + "07 00 00 00")


def test_tcreate_extension_only_in_dotu():
    msg = m.Tcreate(tag=1, fid=4, name="f", perm=0o644, mode=1, extension="x")
    base = "04 00 00 00 01 00 66 a4 01 00 00 01"
    assert codec.encode(msg, P2000) == _hex("13 00 00 00 72 01 00" + base)
    assert codec.encode(msg, P2000L) == _hex("13 00 00 00 72 01 00" + base)
    assert codec.encode(msg, P2000U) == _hex("16 00 00 00 72 01 00" + base + "01 00 78")


def test_dialect_only_fields_of_every_class():
    """Pin the Only markers: which fields each dialect adds, as the specs define them."""
    dotu_only = {
        (cls.__name__, f.name)
        for cls in [*m.MESSAGE_TYPES.values(), Stat]
        for f in wire_fields(cls)
        if f.only is not None
    }
    assert dotu_only == {
        ("Tauth", "n_uname"), ("Tattach", "n_uname"), ("Rerror", "errno"), ("Tcreate", "extension"),
        ("Stat", "extension"), ("Stat", "n_uid"), ("Stat", "n_gid"), ("Stat", "n_muid"),
    }
    in_dotl = {
        (cls.__name__, f.name)
        for cls in [*m.MESSAGE_TYPES.values(), Stat]
        for f in wire_fields(cls)
        if f.only is not None and present(f.only, P2000L)
    }
    assert in_dotl == {("Tauth", "n_uname"), ("Tattach", "n_uname")}
