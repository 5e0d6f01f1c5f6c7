"""Tversion negotiation and the per-connection fid and tag tables."""

from __future__ import annotations

import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvilfs.ninep.consts import NOFID, Dialect
from anvilfs.ninep.dialect import negotiate, negotiate_msize
from anvilfs.ninep.errors import RequestError
from anvilfs.ninep.fids import FidTable, TagTable

# ---------------------------------------------------------------- version(5)


@pytest.mark.parametrize(
    "offer, dialect",
    [
        ("9P2000.L", Dialect.P2000L),
        ("9P2000.u", Dialect.P2000U),
        ("9P2000", Dialect.P2000),
        ("9P2000.x", Dialect.P2000),  # unknown suffix: fall back to the base protocol
        ("9P2000.U", Dialect.P2000),  # the suffixes are case-sensitive
        ("9P2000.l", Dialect.P2000),
        ("9P2000.L.extra", Dialect.P2000),
        ("9P1999", None),
        ("", None),
        ("9P", None),
        ("9P2000L", None),
        ("9p2000", None),
        ("9P20000", None),
        (".L", None),
    ],
)
def test_negotiate(offer, dialect):
    assert negotiate(offer) is dialect


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_negotiate_any_suffix_after_the_period(suffix):
    expected = {"": Dialect.P2000, "u": Dialect.P2000U, "L": Dialect.P2000L}.get(suffix, Dialect.P2000)
    offer = "9P2000" + ("." + suffix if suffix else "")
    assert negotiate(offer) is expected


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12).filter(lambda s: s.split(".", 1)[0] != "9P2000"))
def test_negotiate_other_protocols_are_unknown(offer):
    assert negotiate(offer) is None


@pytest.mark.parametrize("client, server, agreed", [(8192, 65536, 8192), (1 << 20, 65536, 65536), (4096, 4096, 4096)])
def test_negotiate_msize(client, server, agreed):
    assert negotiate_msize(client, server) == agreed


# ---------------------------------------------------------------- fids


def test_unknown_fid():
    fids = FidTable(limit=4)
    with pytest.raises(RequestError, match="unknown fid 7") as info:
        fids.get(7)
    assert info.value.errno == errno.EBADF
    with pytest.raises(RequestError, match="unknown fid 7"):
        fids.pop(7)
    with pytest.raises(RequestError, match="unknown fid 7"):
        fids.replace(7, "x")
    assert len(fids) == 0


def test_add_get_pop():
    fids = FidTable(limit=4)
    fids.add(0, "root")
    fids.add(5, "list")
    assert (fids.get(0), fids.get(5), len(fids)) == ("root", "list", 2)
    assert fids.pop(5) == "list"
    assert len(fids) == 1
    with pytest.raises(RequestError):
        fids.get(5)


def test_fid_in_use():
    fids = FidTable(limit=4)
    fids.add(3, "a")
    with pytest.raises(RequestError, match="fid 3 already in use") as info:
        fids.add(3, "b")
    assert info.value.errno == errno.EBADF
    assert fids.get(3) == "a"  # the first binding is kept


def test_nofid_cannot_name_a_file():
    fids = FidTable(limit=4)
    with pytest.raises(RequestError, match="NOFID") as info:
        fids.add(NOFID, "x")
    assert info.value.errno == errno.EBADF
    assert len(fids) == 0
    fids.add(NOFID - 1, "largest real fid")


def test_fid_limit():
    fids = FidTable(limit=3)
    for fid in range(3):
        fids.add(fid, fid)
    with pytest.raises(RequestError, match="at most 3 per connection; clunk some") as info:
        fids.add(3, 3)
    assert info.value.errno == errno.EMFILE
    assert len(fids) == 3
    fids.pop(1)  # a clunk frees a slot
    fids.add(3, 3)
    assert len(fids) == 3


def test_replace_rebinds_an_existing_fid_without_counting_against_the_limit():
    fids = FidTable(limit=1)
    fids.add(1, "dir")
    fids.replace(1, "file")  # walk with newfid == fid
    assert fids.get(1) == "file"
    assert len(fids) == 1


def test_clear_returns_everything():
    fids = FidTable(limit=4)
    fids.add(1, "a")
    fids.add(2, "b")
    assert sorted(fids.clear()) == ["a", "b"]
    assert len(fids) == 0
    fids.add(1, "again")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "pop"]), st.integers(0, 6)), max_size=40))
def test_fid_table_matches_a_model(ops):
    limit = 4
    fids, model = FidTable(limit=limit), {}
    for op, fid in ops:
        if op == "add":
            ok = fid not in model and len(model) < limit
            try:
                fids.add(fid, f"v{fid}")
            except RequestError:
                assert not ok
            else:
                assert ok
                model[fid] = f"v{fid}"
        else:
            try:
                value = fids.pop(fid)
            except RequestError:
                assert fid not in model
            else:
                assert value == model.pop(fid)
        assert len(fids) == len(model)


# ---------------------------------------------------------------- tags


def test_duplicate_tag():
    tags = TagTable()
    tags.begin(1, "read")
    with pytest.raises(RequestError, match="tag 1 is already in flight") as info:
        tags.begin(1, "write")
    assert info.value.errno == errno.EINVAL
    assert tags.get(1) == "read"


def test_tag_can_be_reused_after_it_ends():
    tags = TagTable()
    tags.begin(1, "read")
    assert 1 in tags and len(tags) == 1
    assert tags.end(1) == "read"
    assert 1 not in tags and len(tags) == 0
    tags.begin(1, "write")
    assert tags.get(1) == "write"


def test_unknown_tags():
    tags = TagTable()
    assert tags.get(9) is None
    assert tags.end(9) is None  # flushing a finished request is not an error
    assert 9 not in tags


def test_tag_values():
    tags = TagTable()
    tags.begin(1, "a")
    tags.begin(2, "b")
    assert sorted(tags.values()) == ["a", "b"]
