"""The beads' fast TOML writer: whatever it writes, tomllib reads back the same."""

from __future__ import annotations

import json
import tomllib

from hypothesis import given
from hypothesis import strategies as st

from anvilfs.storage.tomlwrite import dumps

keys = st.text(min_size=1, max_size=12)
scalars = st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(), st.floats(allow_nan=False, allow_infinity=False))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=12)
tables = st.dictionaries(keys, values, max_size=5)


@given(session=tables, agent=tables, queue=st.lists(st.dictionaries(keys, scalars, min_size=1, max_size=3), max_size=3))
def test_what_is_written_reads_back(session, agent, queue):
    doc = {"session": session, "agent": agent, "queue": queue}
    back = tomllib.loads(dumps(doc, comment="a comment"))
    assert back["session"] == session and back["agent"] == agent
    assert back.get("queue", []) == queue


def test_prompts_with_every_awkward_character_survive():
    text = 'line one\nquote " backslash \\ tab \t del \x7f nul \x00 é 😀 \u2028 """ \'\'\''
    back = tomllib.loads(dumps({"queue": [{"text": text}]}))
    assert back["queue"][0]["text"] == text


@given(text=st.text())
def test_strings_are_escaped_as_json_dumps_does_but_for_del(text):
    expected = json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
    assert dumps({"t": {"s": text}}) == f"\n[t]\ns = {expected}\n"
