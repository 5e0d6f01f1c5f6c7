"""ctl lines: split_words / quote_word, and the CommandTable that runs them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvilfs.errors import AnvilError, InvalidRequest, NotFound
from anvilfs.tree.ctl import Args, Command, CommandTable
from anvilfs.tree.quoting import quote_word, split_words

# ---------------------------------------------------------------- split_words


@pytest.mark.parametrize(
    "line, words",
    [
        ("", []),
        ("   \t ", []),
        ("stop", ["stop"]),
        ("claim  worker-1", ["claim", "worker-1"]),
        ("a\tb \t c", ["a", "b", "c"]),
        ("  lead and trail  ", ["lead", "and", "trail"]),
        ("new 'Research auth' researcher", ["new", "Research auth", "researcher"]),
        ("'it''s' done", ["it's", "done"]),
        ("''''", ["'"]),
        ("''", [""]),
        ('""', [""]),
        ("a '' b", ["a", "", "b"]),
        ("'a\\b'", ["a\\b"]),  # no escapes inside single quotes
        ("back\\slash", ["back\\slash"]),  # nor outside quotes
        ('new "Research auth" researcher "Analyze the code"', ["new", "Research auth", "researcher", "Analyze the code"]),
        ('"say \\"hi\\""', ['say "hi"']),
        ('"a\\\\b"', ["a\\b"]),
        ('"line\\nbreak\\ttab"', ["line\nbreak\ttab"]),
        ('"keep\\q"', ["keep\\q"]),  # an unknown escape keeps its backslash
        ("\"it's\"", ["it's"]),
        ("'say \"hi\"'", ['say "hi"']),
        ("pre'mid dle'post", ["premid dlepost"]),  # quotes join into the word around them
        ("name='Ada Lovelace' role=r", ["name=Ada Lovelace", "role=r"]),
        ("ünï ✓", ["ünï", "✓"]),
    ],
)
def test_split_words(line, words):
    assert split_words(line) == words


@pytest.mark.parametrize("line", ["'open", "new 'a b", "'it''s", "x'"])
def test_unclosed_single_quote(line):
    with pytest.raises(InvalidRequest, match=r"close the quote ' \(write '' for one inside\): it is open in"):
        split_words(line)


@pytest.mark.parametrize("line", ['"open', 'new "a b', '"trailing backslash\\', '"esc \\"'])
def test_unclosed_double_quote(line):
    with pytest.raises(InvalidRequest, match=r'close the quote " \(write \\" for one inside\): it is open in'):
        split_words(line)


def test_unclosed_quote_error_shows_the_line():
    with pytest.raises(InvalidRequest) as info:
        split_words("new 'oops")
    assert "new 'oops" in info.value.message


@pytest.mark.parametrize(
    "word, quoted",
    [("plain", "plain"), ("", "''"), ("a b", "'a b'"), ("it's", "'it''s'"), ('say "x"', "'say \"x\"'")],
)
def test_quote_word(word, quoted):
    assert quote_word(word) == quoted


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=12), max_size=8))
def test_quote_word_split_words_round_trip(words):
    line = " ".join(quote_word(w) for w in words)
    assert split_words(line) == words


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=" \t'\"\\ab", max_size=8), max_size=6))
def test_round_trip_with_awkward_characters(words):
    line = "\t".join(quote_word(w) for w in words)
    assert split_words(line) == words


# ---------------------------------------------------------------- CommandTable


class Recorder:
    """Runs of commands, in order; a run named 'fail' raises."""

    def __init__(self):
        self.calls: list[tuple[str, Args]] = []

    def command(self, name: str, **kw) -> Command:
        def run(args: Args):
            self.calls.append((name, args))
            if args.words[:1] == ("boom",):
                raise NotFound("no such thing")
            return f"{name}:{len(self.calls)}"

        return Command(name=name, run=run, **kw)


@pytest.fixture
def rec():
    return Recorder()


@pytest.fixture
def table(rec):
    return CommandTable(
        [
            rec.command(
                "new",
                usage="new <backend> <cwd> [name=N] [role=R] [ephemeral]",
                min_words=2,
                max_words=2,
                options=frozenset({"name", "role"}),
                flags=frozenset({"ephemeral"}),
            ),
            rec.command("stop", usage="stop"),
            rec.command("complete", usage="complete [result]", max_words=1),
            rec.command("say", usage="say <word> ...", min_words=1, max_words=None),
        ]
    )


def test_unknown_command_lists_the_usages(table):
    with pytest.raises(InvalidRequest) as info:
        table.run_line("launch x")
    assert "unknown command 'launch'" in info.value.message
    assert "stop" not in info.value.message  # the usages go to `errors` only, as detail
    for usage in ["new <backend> <cwd> [name=N] [role=R] [ephemeral]", "stop", "complete [result]", "say <word> ..."]:
        assert usage in info.value.detail


def test_options_and_flags(table, rec):
    assert table.run_line("new sim /tmp name='my bot' ephemeral role=r") == "new:1"
    (name, args), = rec.calls
    assert name == "new"
    assert args.words == ("sim", "/tmp")
    assert args.options == {"name": "my bot", "role": "r"}
    assert args.flags == frozenset({"ephemeral"})


def test_options_may_be_left_out(table, rec):
    table.run_line("new sim /tmp")
    assert rec.calls[0][1] == Args(("sim", "/tmp"), {}, frozenset())


def test_flag_word_before_the_required_words_is_positional(table, rec):
    table.run_line("new ephemeral /tmp")
    assert rec.calls[0][1].words == ("ephemeral", "/tmp")
    assert rec.calls[0][1].flags == frozenset()


def test_unknown_key_is_a_positional_word(table, rec):
    table.run_line("complete colour=red")
    assert rec.calls[0][1].words == ("colour=red",)
    assert rec.calls[0][1].options == {}


@pytest.mark.parametrize(
    "line, problem",
    [
        ("new sim", "needs 2 arguments, got 1"),
        ("new", "needs 2 arguments, got 0"),
        ("new sim /tmp extra", "unexpected 'extra'"),
        ("stop now", "unexpected 'now'"),
        ("complete a b c", "unexpected 'b c'"),
        ("say", "needs 1 argument, got 0"),
        ("new sim /tmp name=a name=b", "name= given twice"),
    ],
)
def test_argument_errors_name_the_command_and_its_usage(table, rec, line, problem):
    with pytest.raises(InvalidRequest) as info:
        table.run_line(line)
    command = line.split()[0]
    usage = {"new": "new <backend> <cwd> [name=N] [role=R] [ephemeral]", "stop": "stop",
             "complete": "complete [result]", "say": "say <word> ..."}[command]
    assert info.value.message == f"{command}: {problem}: invalid, see errors for the usage"
    assert info.value.detail == f"usage: {usage}"  # the usage goes to `errors` only
    assert rec.calls == []  # nothing ran


def test_unlimited_words(table, rec):
    table.run_line("say a b c d e")
    assert rec.calls[0][1].words == ("say", "a", "b", "c", "d", "e")[1:]


def test_errors_from_run_are_prefixed_with_the_command_keeping_their_type(table):
    with pytest.raises(NotFound) as info:
        table.run_line("complete boom")
    assert info.value.message == "complete: no such thing"


def test_error_already_naming_the_command_is_not_prefixed_twice():
    def run(args):
        raise InvalidRequest("stop: already stopped")

    table = CommandTable([Command("stop", run, usage="stop")])
    with pytest.raises(InvalidRequest) as info:
        table.run_line("stop")
    assert info.value.message == "stop: already stopped"


def test_other_exceptions_pass_through():
    def run(args):
        raise RuntimeError("bug")

    table = CommandTable([Command("x", run, usage="x")])
    with pytest.raises(RuntimeError, match="bug"):
        table.run_line("x")


def test_blank_line_does_nothing(table, rec):
    assert table.run_line("   ") is None
    assert rec.calls == []


def test_lines_run_in_order_and_the_last_result_is_returned(table, rec):
    assert table.run_text("new sim /a\n\nsay hi\ncomplete\n") == "complete:3"
    assert [(n, a.words) for n, a in rec.calls] == [("new", ("sim", "/a")), ("say", ("hi",)), ("complete", ())]


def test_first_failure_stops_the_rest(table, rec):
    with pytest.raises(AnvilError) as info:
        table.run_text("say one\ncomplete boom\nsay three\n")
    assert info.value.message == "line 2: complete: no such thing (the 1 before it were done, the rest not)"
    assert [a.words for _, a in rec.calls] == [("one",), ("boom",)]


def test_parse_failure_on_a_later_line_stops_there(table, rec):
    with pytest.raises(InvalidRequest, match="stop: unexpected"):
        table.run_text("say one\nstop now\nsay three")
    assert [a.words for _, a in rec.calls] == [("one",)]


def test_crlf_lines(table, rec):
    table.run_text("say one\r\nsay two\r\n")
    assert [a.words for _, a in rec.calls] == [("one",), ("two",)]


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_only_newline_ends_a_line(table, rec, sep):
    """A quoted word may hold any character but a newline; other Unicode line
    breaks are not command separators (see the report: run_text uses splitlines)."""
    table.run_text(f"say 'a{sep}b'\n")
    assert [a.words for _, a in rec.calls] == [(f"a{sep}b",)]


def test_a_multi_line_write_says_which_line_failed_and_what_was_done():
    done = []
    table = CommandTable([Command("go", lambda args: done.append(args.words) or None, "go <word>", min_words=1, max_words=1)])
    with pytest.raises(InvalidRequest, match=r"^line 4: go: needs 1 argument.*\(the 2 before it were done, the rest not\)"):
        table.run_text("go a\n\ngo b\ngo\ngo c\n")
    assert done == [("a",), ("b",)]
    with pytest.raises(InvalidRequest, match=r"^go: needs 1 argument"):  # a first line that fails needs no number
        table.run_text("go\ngo d\n")


def test_a_ctl_line_longer_than_4000_bytes_is_refused_with_where_long_text_goes():
    import errno

    from anvilfs.errors import TooLong

    ran = []
    table = CommandTable([Command("say", lambda args: ran.append(args) or None, "say <word>", min_words=1, max_words=None)])
    table.run_text("say " + "x" * 3996)  # 4000 bytes: fine
    with pytest.raises(TooLong, match="at most 4000 bytes \\(line 1 has 4001\\); put long text in a file") as info:
        table.run_text("say " + "x" * 3997)
    assert info.value.errno == errno.E2BIG and len(ran) == 1
