"""A claude-tmux turn's usage from Claude Code's transcript (backends/claude_transcript.py), on a real one.

tests/fixtures/claude-stream-json/transcript.jsonl is the conversation of that directory's runs, as the
pinned Claude Code kept it: the turn of "write the notes" (two requests, the first written as two lines with
the same message id), then "second words" (one request), and more. Each test writes the file as Claude Code
would, a turn at a time, and checks the usage against what the stub reported for that turn's requests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness.recorded_output import RecordedOutput

from anvilfs.backends import claude_transcript
from anvilfs.backends.claude_transcript import TurnSpending, transcript_dir
from anvilfs.usage import Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-stream-json"
LINES = (FIXTURES / "transcript.jsonl").read_bytes().splitlines(keepends=True)
CONVERSATION = json.loads(LINES[0])["sessionId"]


def prompt_line(text: str) -> int:
    """The index of the line of the prompt `text` (a turn's lines begin with its queue-operation, before it)."""
    return next(n for n, line in enumerate(LINES)
                if json.loads(line).get("type") == "user" and json.loads(line)["message"].get("content") == text)


FIRST, SECOND, THIRD = prompt_line("write the notes"), prompt_line("second words"), prompt_line("trailing")


def reported(name: str) -> Usage:
    requests = json.loads((FIXTURES / f"{name}.requests.json").read_text())["usage"]
    return sum((Usage(input_tokens=r["input_tokens"], output_tokens=r["output_tokens"],
                      cache_read_tokens=r["cache_read_input_tokens"],
                      cache_write_tokens=r["cache_creation_input_tokens"]) for r in requests), Usage())


@pytest.fixture
def transcript(tmp_path) -> Path:
    path = transcript_dir({"HOME": str(tmp_path)}) / "-tmp-work" / f"{CONVERSATION}.jsonl"
    path.parent.mkdir(parents=True)
    return path


def spending(tmp_path) -> TurnSpending:
    return TurnSpending(transcript_dir({"HOME": str(tmp_path)}), CONVERSATION)


def append(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as f:
        f.write(b"".join(lines))


def test_a_first_turn_counts_each_request_once_though_one_is_written_as_two_lines(tmp_path, transcript):
    turn = spending(tmp_path)  # before the prompt: there is no transcript yet
    append(transcript, LINES[:SECOND - 2])
    output = RecordedOutput()
    turn.report(output)
    assert output.reports == [reported("tool_turn")] and output.notes == []


def test_a_later_turn_counts_only_the_lines_after_its_prompt_was_typed(tmp_path, transcript):
    append(transcript, LINES[:SECOND - 2])
    turn = spending(tmp_path)
    append(transcript, LINES[SECOND - 2:THIRD - 2])
    output = RecordedOutput()
    turn.report(output)
    assert output.reports == [reported("resumed_turn")] and output.notes == []


def test_read_as_it_grows_in_pieces_that_cut_lines_anywhere(tmp_path, transcript):
    turn = spending(tmp_path)
    data = b"".join(LINES[:SECOND - 2])
    for start in range(0, len(data), 999):
        append(transcript, [data[start:start + 999]])
        turn.look(most=500)  # less than was written: the rest is read at the next look, or at the end
    output = RecordedOutput()
    turn.report(output)
    assert output.reports == [reported("tool_turn")] and output.notes == []


def test_a_turn_whose_last_message_is_not_in_yet_is_noted_as_counted_in_part(tmp_path, transcript):
    turn = spending(tmp_path)
    last_tool_call = max(n for n, line in enumerate(LINES[:SECOND]) if b'"stop_reason":"tool_use"' in line)
    append(transcript, LINES[:last_tool_call + 1])
    output = RecordedOutput()
    turn.report(output)
    first_request = json.loads(LINES[last_tool_call])["message"]["usage"]
    assert output.spent.input_tokens == first_request["input_tokens"]
    assert any("did not show this turn's last message" in note and "the 1 request(s)" in note
               for note in output.notes), output.notes


def test_garbage_and_an_overlong_line_are_noted_and_skipped(tmp_path, transcript, monkeypatch):
    monkeypatch.setattr(claude_transcript, "MAX_LINE", 4096)
    turn = spending(tmp_path)
    garbage = b'{"type":"assistant", cut short\n'
    long = b'{"type":"assistant","message":{"content":"' + b"x" * 10000 + b'"}}\n'
    append(transcript, [garbage, long, *LINES[:SECOND - 2]])
    output = RecordedOutput()
    turn.report(output)
    assert output.reports == [reported("tool_turn")]
    assert any("no JSON" in note for note in output.notes), output.notes
    assert any("over 4096 bytes was skipped" in note for note in output.notes), output.notes


def test_no_transcript_is_noted_and_reports_nothing(tmp_path):
    output = RecordedOutput()
    spending(tmp_path).report(output)
    assert output.reports == [] and "no transcript of conversation" in output.notes[0], output.notes
