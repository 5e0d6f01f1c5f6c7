"""The "claude-json" reader against real Claude Code stream-json runs (tests/fixtures/claude-stream-json).

Each fixture is one run's stdout captured from the pinned claude against the Anthropic stub (capture.py
there), beside what the stub reported for each request of the run: the usage the reader reports must be
their sum, `out` what plain `claude -p` printed, `stream` readable text and tool calls.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from harness.recorded_output import RecordedOutput, feed_in_pieces

from anvilfs.backends.output_claude import ClaudeReader
from anvilfs.backends.output_formats import MAX_LINE
from anvilfs.usage import Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-stream-json"


def read(name: str) -> tuple[RecordedOutput, ClaudeReader]:
    """The fixture fed in pieces of a few characters (lines split anywhere, as a pipe gives them)."""
    output = RecordedOutput()
    reader = ClaudeReader(output)
    text = (FIXTURES / f"{name}.jsonl").read_text()
    feed_in_pieces(reader, text, pieces=len(text) // 7)
    return output, reader


def reported(name: str) -> Usage:
    """What the stub reported for the run's requests, summed (Anthropic's keys to ours)."""
    requests = json.loads((FIXTURES / f"{name}.requests.json").read_text())["usage"]
    return sum((Usage(input_tokens=r.get("input_tokens", 0), output_tokens=r.get("output_tokens", 0),
                      cache_read_tokens=r.get("cache_read_input_tokens", 0),
                      cache_write_tokens=r.get("cache_creation_input_tokens", 0)) for r in requests), Usage())


def tokens(usage: Usage) -> tuple[int, int, int, int]:
    return usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens


def test_a_turn_with_a_tool_call_reports_every_request_once_with_its_cost():
    output, reader = read("tool_turn")
    assert len(output.reports) == 1, "the run's usage is reported once"
    assert tokens(output.spent) == tokens(reported("tool_turn"))  # two requests, summed
    assert output.spent.cost_usd == pytest.approx(0.0026212)  # as Claude Code priced it (the stub's model)
    assert reader.failure() == "" and output.notes == []


def test_a_resumed_run_reports_its_own_cost_not_the_conversations_running_total():
    output, _ = read("resumed_turn")
    assert tokens(output.spent) == tokens(reported("resumed_turn"))
    # total_cost_usd there is 0.0039924: the first run's 0.0026212 restored, plus this run's
    assert output.spent.cost_usd == pytest.approx(0.0013712)


def test_out_is_the_result_as_plain_print_mode_prints_it():
    output, _ = read("tool_turn")
    assert output.given.startswith("[stub anthropic] tool done: File created successfully at: ")
    assert output.given.endswith(")\n") and output.given.count("\n") == 1  # the result and a newline
    output, _ = read("trailing_newlines")
    assert output.given == "  spaced answer\n\nwith lines\n\n"  # plain -p printed exactly this (measured)


def test_stream_shows_text_as_it_comes_and_each_tool_call_as_one_line():
    output, _ = read("tool_turn")
    lines = output.stream.splitlines()
    assert lines[0] == "[stub anthropic] writing the notes"
    assert lines[1].startswith('[tool Write {"file_path": "') and lines[1].endswith('"content": "hello\\n"}]')
    assert lines[2].startswith("[stub anthropic] tool done: File created successfully")
    assert len(lines) == 3 and output.stream.endswith("\n"), output.stream
    assert not any(line.startswith("{") for line in lines), "no raw JSON in stream"
    first = output.written[0]
    assert first != lines[0] and lines[0].startswith(first), "text is written as its deltas come, not whole"


def test_an_api_error_is_the_failure_with_the_apis_text_and_spends_nothing():
    output, reader = read("api_error_500")
    assert reader.failure().startswith("API Error: 500 stub model server: HTTP 500 as the script said. "
                                       "This is a server-side issue")
    assert output.given is None
    assert "API Error: 500" in output.stream  # Claude Code's own message, shown though it did not stream
    assert output.reports == [Usage(cost_usd=0.0)], "claude reported nothing spent since the last result"


def test_a_spent_max_budget_fails_the_turn_and_still_counts_what_it_spent():
    output, reader = read("budget_exhausted")
    assert reader.failure() == "Reached maximum budget ($0.002)"
    # the result's `usage` is all zeros here: the run's own figures are model_usage_since_last_result
    assert tokens(output.spent) == tokens(reported("budget_exhausted")) != (0, 0, 0, 0)
    assert output.spent.cost_usd > 0
    assert output.given is None


@pytest.mark.parametrize("ids", ["as 2.1.332 gives them", "without api_message_id"])
def test_a_run_cut_short_before_its_result_counts_the_requests_it_streamed(ids):
    lines = (FIXTURES / "tool_turn.jsonl").read_text().splitlines(keepends=True)
    if ids == "without api_message_id":  # a message_delta is then the message's that started last
        lines = [re.sub(r',"api_message_id":"[^"]*"', "", line) for line in lines]
    [last] = [n for n, line in enumerate(lines) if '"type":"result"' in line]
    cut = "".join(lines[:last]) + lines[last][:40]  # killed in the middle of the result's line
    output = RecordedOutput()
    reader = ClaudeReader(output)
    reader.feed(cut)
    reader.close()
    assert tokens(output.spent) == tokens(reported("tool_turn")) and output.spent.cost_usd is None
    assert reader.failure() == ""  # the exit status tells why it ended
    assert any("ended in the middle of a line" in note for note in output.notes), output.notes
    assert any("without its result" in note for note in output.notes), output.notes
    assert "[stub anthropic] tool done" in output.stream


def test_a_line_of_garbage_is_noted_and_the_turn_goes_on():
    text = (FIXTURES / "resumed_turn.jsonl").read_text().splitlines(keepends=True)
    output = RecordedOutput()
    reader = ClaudeReader(output)
    for line in text[:3] + ["not json at all\n", "[1, 2]\n"] + text[3:]:
        reader.feed(line)
    reader.close()
    assert output.given == "[stub anthropic] turn 2: you said second words\n"
    assert tokens(output.spent) == tokens(reported("resumed_turn"))
    assert [note for note in output.notes if "no JSON object" in note] and len(output.notes) == 2, output.notes
    assert reader.failure() == ""


def test_a_line_over_the_bound_is_dropped_with_a_note_and_not_kept():
    output = RecordedOutput()
    reader = ClaudeReader(output)
    chunk = "x" * 65536
    for _ in range(MAX_LINE // len(chunk) + 2):  # over the bound, fed as a pipe would
        reader.feed(chunk)
        assert reader._length <= MAX_LINE  # what is kept of the line stays bounded
    reader.feed("\n")
    for line in (FIXTURES / "resumed_turn.jsonl").read_text().splitlines(keepends=True):
        reader.feed(line)
    reader.close()
    assert any("longer than" in note and "dropped" in note for note in output.notes), output.notes
    assert output.given == "[stub anthropic] turn 2: you said second words\n"


def test_without_partial_messages_the_whole_messages_are_shown():
    """A configuration that leaves out --include-partial-messages: each block is shown from its assistant event."""
    lines = (FIXTURES / "tool_turn.jsonl").read_text().splitlines(keepends=True)
    output = RecordedOutput()
    reader = ClaudeReader(output)
    for line in lines:
        if '"type":"stream_event"' not in line:
            reader.feed(line)
    reader.close()
    shown = output.stream.splitlines()
    assert shown[0] == "[stub anthropic] writing the notes" and shown[1].startswith("[tool Write {")
    assert tokens(output.spent) == tokens(reported("tool_turn"))


def test_usage_that_is_no_count_is_noted_not_reported():
    output = RecordedOutput()
    reader = ClaudeReader(output)
    reader.feed(json.dumps({"type": "result", "is_error": False, "result": "x",
                            "model_usage_since_last_result": {"m": {"inputTokens": -3, "costUSD": 0.1}}}) + "\n")
    reader.close()
    assert output.reports == [] and output.given == "x\n"
    assert any("inputTokens is -3" in note for note in output.notes), output.notes
