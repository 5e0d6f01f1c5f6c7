"""Reading `codex exec --json` (backends/output_codex.py), fed with what codex 0.171 printed against the stub.

The fixtures (fixtures/cli-output/codex-N.jsonl) are three runs of one thread:
a turn with a shell call (two requests), a resumed turn (one request), a
turn whose request failed with 500. The stub reported, per request
(input_tokens, of which cached and cache-written, output_tokens):
(120, 10, 3, 21), (134, 20, 0, 22), (124, 0, 3, 23); codex prints the
thread's running totals, so each turn's usage is the difference.
"""

from __future__ import annotations

from pathlib import Path

from harness.recorded_output import RecordedOutput, feed_in_pieces

from anvilfs.backends.output_codex import CodexReader
from anvilfs.usage import Usage

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cli-output"
THREAD = "01a24b77-fce8-7f40-a367-4d2e60bd8574"


def run(name: str, memory: dict | None = None, pieces: int = 7) -> tuple[CodexReader, RecordedOutput]:
    """The reader fed the captured stdout in pieces that split its lines anywhere."""
    text = (FIXTURES / name).read_text()
    output = RecordedOutput()
    reader = CodexReader(output)
    reader.memory = dict(memory or {})
    feed_in_pieces(reader, text, pieces)
    return reader, output


def test_a_turn_with_a_tool_call_gives_the_last_message_the_call_and_both_requests_usage():
    reader, output = run("codex-1.jsonl")
    assert output.given == ("[stub openai-responses] tool done: Chunk ID: e8dc03\nWall time: 0.0000 seconds\n"
                            "Process exited with code 0\nOriginal token count: 0\nOutput:\n\n")
    assert output.stream.splitlines()[:2] == ["running a command", "[tool shell /bin/bash -lc 'echo hi > f.txt']"]
    assert output.spent == Usage(input_tokens=(120 - 10 - 3) + (134 - 20), output_tokens=21 + 22,
                                 cache_read_tokens=10 + 20, cache_write_tokens=3)
    assert len(output.reports) == 1  # the turn's, once
    assert reader.conversation() == THREAD and reader.failure() == ""
    assert output.notes == [f"codex thread {THREAD}"]


def test_a_resumed_turn_counts_only_what_it_spent_beyond_the_thread_s_earlier_turns():
    first, _ = run("codex-1.jsonl")
    reader, output = run("codex-2.jsonl", first.memory)
    assert output.given == "[stub openai-responses] turn 2: you said hello\n"
    assert output.spent == Usage(input_tokens=124 - 3, output_tokens=23, cache_write_tokens=3)
    assert reader.memory == {"thread": THREAD, "input_tokens": 378, "cached_input_tokens": 30,
                             "cache_write_input_tokens": 6, "output_tokens": 66}


def test_without_memory_of_its_thread_a_turn_counts_the_thread_s_totals():
    # a thread begun by an older anvilfs, or a memory of another thread: all codex reported, once
    _, output = run("codex-2.jsonl", {"thread": "another", "input_tokens": 5})
    assert output.spent == Usage(input_tokens=378 - 30 - 6, output_tokens=66, cache_read_tokens=30,
                                 cache_write_tokens=6)


def test_a_failed_turn_says_codex_s_words_and_reports_no_usage():
    reader, output = run("codex-3.jsonl")
    assert reader.failure() == "We’re currently experiencing high demand, which may cause temporary errors."
    assert output.spent is None and output.given == ""
    assert "codex: We’re currently experiencing high demand" in output.notes[1]


def test_tool_calls_of_every_kind_are_one_line_each():
    output = RecordedOutput()
    reader = CodexReader(output)
    items = [
        '{"id":"1","type":"mcp_tool_call","server":"anvilfs","tool":"claim","arguments":{"id":"b-1"},"status":"in_progress"}',
        '{"id":"2","type":"file_change","changes":[{"path":"notes.txt","kind":"add"}],"status":"completed"}',
        '{"id":"3","type":"reasoning","text":"**Thinking** about\\nit"}',
        '{"id":"4","type":"command_execution","command":"' + "x" * 400 + '","status":"in_progress"}',
    ]
    for item in items:
        reader.feed(f'{{"type":"item.started","item":{item}}}\n{{"type":"item.completed","item":{item}}}\n')
    reader.close()
    lines = output.stream.splitlines()
    assert lines[:3] == ['[tool anvilfs.claim {"id": "b-1"}]', "[tool patch add notes.txt]", "[thinking **Thinking** about it]"]
    assert lines[3].startswith("[tool shell xxx") and lines[3].endswith("…]") and len(lines[3]) < 200
    assert len(lines) == 4  # a call started and completed is one line
