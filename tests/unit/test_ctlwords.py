"""client/ctlwords.py against the server's own reading of a ctl write: any text a model or a person gives
comes back as the one word it was, and never makes a second command."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from anvilfs.client.ctlwords import ctl_line, quote
from anvilfs.mcpserver.tools import BLOCKING
from anvilfs.tree.ctl import Command, CommandTable
from anvilfs.tree.quoting import split_words

# every character, controls, NUL, line and paragraph separators and unpaired-free unicode included
ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


def server_reads(text: str) -> list[list[str]]:
    """The commands the server runs for a write of TEXT to a ctl file: each one's words, the verb first."""
    ran: list[list[str]] = []

    def record(args) -> None:
        ran.append(["v", *args.words])

    table = CommandTable([Command("v", record, "v [word ...]", max_words=None)])
    table.run_text(text)
    return ran


@settings(max_examples=500, deadline=None)
@given(st.lists(ANY_TEXT, max_size=5))
def test_every_text_comes_back_as_its_one_word_in_one_command(words):
    assert server_reads(ctl_line("v", *words)) == [["v", *words]]


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_a_quoted_word_splits_back_whole(word):
    assert split_words(quote(word)) == [word]


def test_the_texts_that_would_make_a_second_command_or_other_words():
    for word in ("a\nunclaim", "a\r\nunclaim", 'x" unclaim "', "it's", "back\\", "\\n", "", " ", "\x00", "a\x00\nb"):
        assert server_reads(ctl_line("v", word)) == [["v", word]], repr(word)


def test_the_read_tool_refuses_every_file_whose_read_blocks():
    """Every StreamFile of the tree (the only files whose reads block) is named in BLOCKING."""
    streams = set()
    for source in Path(__file__).resolve().parents[2].joinpath("anvilfs", "fs").glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "StreamFile":
                streams.add(node.args[0].value)
    assert streams and streams == set(BLOCKING)
