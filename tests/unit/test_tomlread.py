"""tomlread reads what tomlwrite writes exactly as tomllib does, and leaves everything else to tomllib."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anvilfs.storage import tomlread, tomlwrite

keys = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True) | st.text(min_size=1, max_size=8)
scalars = (st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=8)
tables = st.dictionaries(keys, values, max_size=6)
documents = st.dictionaries(keys, values | tables | st.lists(tables, min_size=1, max_size=3), max_size=6)


@given(documents)
def test_what_the_writer_writes_reads_back_as_tomllib_reads_it(document):
    text = tomlwrite.dumps(document, comment="written by the server")
    assert tomlread.loads(text) == tomllib.loads(text)


def test_the_servers_own_files_take_the_fast_path(monkeypatch):
    text = tomlwrite.dumps({"queue": [{"text": "hi \"there\"\n", "sender": "x"}],
                            "session": {"name": "bot1", "ephemeral": False, "turns": 3, "cost": 0.25},
                            "status": {"state": "idle", "detail": "é \x7f \t"}}, comment="c")

    def no_tomllib(_):
        raise AssertionError("tomllib was asked to read a file the server wrote")

    monkeypatch.setattr(tomlread.tomllib, "loads", no_tomllib)
    assert tomlread.loads(text)["status"]["detail"] == "é \x7f \t"


HAND_EDITED = [
    'a = 1 # a comment after a value\n',
    'a = 1979-05-27T07:32:00Z\n',
    "a = 'a literal string'\n",
    'a = """\nmany\nlines"""\n',
    'a = {b = 1, c = "two"}\n',
    '"quoted key" = 1\n',
    'a.b = 1\n',
    'a = 1_000\n',
    'a = inf\n',
    'a = "\\U0001F600"\n',
    '[t]\r\nx = 1\r\n',
    '  a = 1\n',
    'a=1\n',
]


@pytest.mark.parametrize("text", HAND_EDITED)
def test_what_people_write_is_read_by_tomllib(text):
    assert tomlread.loads(text) == tomllib.loads(text)


BROKEN = [
    'a = 1\na = 2\n',  # a duplicate key
    '[t]\n[t]\n',  # a table twice
    'a = 1\n[a]\n',  # a key that is also a table
    'a = [1, 2\n',
    'a = "\\/"\n',  # JSON's escape, not TOML's
    'a = "\\ud800"\n',  # a lone surrogate
    'a = NaN\n',
    'a = null\n',
    'a = [{"b": 1}]\n',
    'x\n',
    # found in review: JSON and TOML part ways
    'a = "\\ud83d\\ude00"\n',  # a surrogate pair as escapes: JSON joins it, TOML refuses each
    'a = "\x7f"\n',  # a raw DEL
    'a = 1\r',  # a bare carriage return
    '# \x01\n',  # a control character in a comment
    'a = []\n[[a]]\nb = 1\n',  # a table header may not extend a key's array
]


@pytest.mark.parametrize("text", BROKEN)
def test_what_is_not_toml_fails_as_tomllib_fails(text):
    with pytest.raises(tomllib.TOMLDecodeError) as expected:
        tomllib.loads(text)
    with pytest.raises(tomllib.TOMLDecodeError) as got:
        tomlread.loads(text)
    assert str(got.value) == str(expected.value)
