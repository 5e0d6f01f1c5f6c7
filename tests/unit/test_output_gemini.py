"""Reading Gemini CLI's stream-json (backends/output_gemini.py), fed with what 0.61 printed against the stub.

The fixtures (fixtures/cli-output/gemini-N.jsonl) are three runs of one session:
a turn with a write_file call (two requests), a resumed turn (one request),
a turn whose request failed with 500. The stub reported, per request
(promptTokenCount, of which cached, candidatesTokenCount, thoughtsTokenCount):
(117, 10, 21, 1), (134, 20, 22, 2), (121, 0, 23, 3). Plain (text) output of
the first run printed "writing it\\n" and the tool's answer, then a newline.
"""

from __future__ import annotations

from pathlib import Path

from harness.recorded_output import RecordedOutput, feed_in_pieces

from anvilfs.backends.output_gemini import GeminiReader
from anvilfs.usage import Usage

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cli-output"
WROTE = "/tmp/cap.98k4dtx1/work/notes/hello.txt"


def run(name: str, pieces: int = 5) -> tuple[GeminiReader, RecordedOutput]:
    text = (FIXTURES / name).read_text()
    output = RecordedOutput()
    reader = GeminiReader(output)
    feed_in_pieces(reader, text, pieces)
    return reader, output


def test_a_turn_with_a_tool_call_answers_as_the_plain_output_and_counts_both_requests():
    reader, output = run("gemini-1.jsonl")
    done = ('[stub gemini] tool done: {"output": "Successfully created and wrote to new file: ' + WROTE
            + '. Here is the updated code:\\nhi\\n"}')
    assert output.given == "writing it\n" + done + "\n"
    assert output.stream == ('writing it\n[tool write_file {"file_path": "notes/hello.txt", "content": "hi\\n"}]\n'
                             + done)
    assert output.spent == Usage(input_tokens=(117 - 10) + (134 - 20), cache_read_tokens=10 + 20,
                                 output_tokens=(21 + 1) + (22 + 2))  # thoughts are what it wrote too
    assert reader.failure() == "" and output.notes == []


def test_a_resumed_turn_counts_its_own_requests():
    _, output = run("gemini-2.jsonl")
    assert output.given == "[stub gemini] turn 2: you said hello\n"
    assert output.spent == Usage(input_tokens=121, output_tokens=23 + 3)


def test_a_failed_model_call_is_the_failure_in_the_api_s_words():
    reader, output = run("gemini-3.jsonl")
    assert reader.failure() == ('[API Error: {"error":{"code":500,"message":"stub model server: HTTP 500 as the '
                                'script said","status":"INTERNAL"}}]')
    assert output.given == "" and output.spent == Usage()


def test_warnings_and_failed_tools_are_lines_of_their_own():
    output = RecordedOutput()
    reader = GeminiReader(output)
    reader.feed('{"type":"message","role":"assistant","content":"half a line","delta":true}\n'
                '{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}\n'
                '{"type":"tool_result","tool_id":"x","status":"error","error":{"type":"T","message":"no such file"}}\n')
    reader.close()
    assert output.stream == ("half a line\n[warning: Loop detected, stopping execution]\n"
                             "[tool failed: no such file]\n")
    assert output.given == "half a line\n"
