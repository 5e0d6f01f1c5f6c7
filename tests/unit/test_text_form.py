"""The canonical text form: format_message / parse_message."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import messages as m
from anvilfs.ninep.consts import NOFID, NOTAG
from anvilfs.ninep.errors import LocalProtocolError
from anvilfs.ninep.fields import Qid, Stat
from anvilfs.ninep.text import format_message, parse_message
from strategies import CASES, STRATEGIES, case_id, dialect_and_message

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("case", CASES, ids=case_id)
@FAST
@given(data=st.data())
def test_parse_format_round_trip(case, data):
    msg = data.draw(STRATEGIES[case])
    text = format_message(msg)
    assert parse_message(text) == msg


@settings(max_examples=200, deadline=None)
@given(dialect_and_message())
def test_text_form_is_one_line_starting_with_name_and_tag(case):
    _, msg = case
    text = format_message(msg)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(f"{type(msg).__name__} tag {msg.tag}")


@pytest.mark.parametrize(
    "msg, text",
    [
        (m.Tversion(tag=NOTAG, msize=8192, version="9P2000"), "Tversion tag 65535 msize 8192 version 9P2000"),
        (m.Twalk(tag=1, fid=1, newfid=2, wnames=("agent", "a b")), 'Twalk tag 1 fid 1 newfid 2 wnames [agent "a b"]'),
        (m.Twalk(tag=1, fid=1, newfid=1), "Twalk tag 1 fid 1 newfid 1 wnames []"),
        (m.Rwalk(tag=1, wqids=(Qid(0x80, 0, 1),)), "Rwalk tag 1 wqids [(0x80 0 1)]"),
        (m.Rread(tag=3, data=b"await\n"), 'Rread tag 3 data "await\\n"'),
        (m.Rread(tag=3, data=b'\x00"\\\xff'), 'Rread tag 3 data "\\x00\\"\\\\\\xff"'),
        (
            m.Rstat(tag=4, stat=Stat(qid=Qid(0, 0, 7), mode=0o444, name="list")),
            "Rstat tag 4 stat {qid (0x0 0 7) mode 0o444 name list}",
        ),
        (m.Rerror(tag=1, ename="no such file"), 'Rerror tag 1 ename "no such file"'),
        (m.Rerror(tag=1, ename="no such file", errno=2), 'Rerror tag 1 ename "no such file" errno 2'),
        (
            m.Tattach(tag=1, fid=0, afid=NOFID, uname="glenda", aname=""),
            'Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""',
        ),
        (
            m.Tattach(tag=1, fid=0, uname="glenda", n_uname=1000),
            'Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 1000',
        ),
        (m.Tcreate(tag=2, fid=1, name="f", perm=0o644, mode=1), "Tcreate tag 2 fid 1 name f perm 0o644 mode 0o1"),
        (m.Rlerror(tag=5, ecode=2), "Rlerror tag 5 ecode 2"),
        (m.Rflush(tag=6), "Rflush tag 6"),
        (m.Tversion(tag=1, msize=1, version="tab\there"), 'Tversion tag 1 msize 1 version "tab\\there"'),
        (m.Tversion(tag=1, msize=1, version="bell\x07"), 'Tversion tag 1 msize 1 version "bell\\x07"'),
    ],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_exact_text(msg, text):
    assert format_message(msg) == text
    assert parse_message(text) == msg


def test_data_limit_shortens_data_only():
    msg = m.Rread(tag=3, data=b"abcdefghij")
    assert format_message(msg, data_limit=3) == 'Rread tag 3 data "abc"...(10 bytes)'
    assert format_message(msg, data_limit=10) == 'Rread tag 3 data "abcdefghij"'
    long_name = m.Tversion(tag=1, msize=1, version="abcdefghij")
    assert format_message(long_name, data_limit=3) == "Tversion tag 1 msize 1 version abcdefghij"


def test_parse_accepts_fields_in_any_order_and_extra_spaces():
    assert parse_message("Tread  fid 3   count 10 offset 0x10 tag 2") == m.Tread(tag=2, fid=3, offset=16, count=10)


@pytest.mark.parametrize(
    "text, problem",
    [
        ("Tnothing tag 1", "unknown message"),
        ("Tclunk tag 1 fid 2 colour 3", "no field"),
        ("Tclunk tag 1", "Tclunk"),  # fid missing
        ("Tclunk tag 1 fid", "ends too soon"),
        ("Twalk tag 1 fid 1 newfid 2 wnames [a b", "ends too soon"),
        ('Tversion tag 1 msize 1 version "unterminated', "cannot read"),
    ],
)
def test_parse_errors(text, problem):
    with pytest.raises(LocalProtocolError, match=problem):
        parse_message(text)


# parse_message otherwise raises LocalProtocolError for text it cannot read, but a
# malformed number, qid or escape escapes as ValueError / KeyError (see the report).
@pytest.mark.parametrize(
    "text",
    [
        "Tclunk tag 1 fid x",
        "Rwalk tag 1 wqids [(1 2)]",
        'Tversion tag 1 msize 1 version "\\q"',
        'Tversion tag 1 msize 1 version "\\x"',
    ],
)
def test_malformed_values_are_local_protocol_errors(text):
    with pytest.raises(LocalProtocolError):
        parse_message(text)
