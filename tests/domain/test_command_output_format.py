"""A command backend reading its CLI's structured output (output_format): the answer alone in `out`, the
conversation's id named by the output, and what a reader remembers between the runs of one conversation.

The fake CLI speaks codex's `exec --json` (output_codex.py): it names a
thread (thread.started), and reports the thread's running totals, which the
reader turns into each turn's own usage with what it remembered of the last.
"""

from __future__ import annotations

import sys

import trio
from harness.recorded_output import RecordedOutput

from anvilfs.backends.command import CommandAgent, CommandBackend
from anvilfs.config.model import CommandBackendConfig
from anvilfs.sessions.backend import TurnFailed
from anvilfs.usage import Usage
from test_backend_command import GUARD, info

FAKE_CODEX = """\
import json, pathlib, sys
args, prompt = sys.argv[1:], sys.stdin.read().strip()
thread = args[args.index("resume") + 1] if "resume" in args else "thr-" + prompt.split()[0]
totals = pathlib.Path("totals-" + thread)  # the thread's running total of input tokens, as codex keeps it
spent = int(totals.read_text()) if totals.exists() else 0
def say(**event): print(json.dumps(event), flush=True)
say(type="thread.started", thread_id=thread)
if "fail" in prompt:
    say(type="turn.failed", error={"message": "the model said no"})
    sys.exit(1)
spent += 100 + len(prompt)
totals.write_text(str(spent))
say(type="item.completed", item={"id": "i0", "type": "agent_message", "text": "in " + thread + ": " + prompt})
say(type="turn.completed", usage={"input_tokens": spent, "cached_input_tokens": 0, "output_tokens": 0})
"""


def fake_codex(tmp_path, script: str = FAKE_CODEX, **changes) -> CommandBackendConfig:
    program = tmp_path / "fake_codex.py"  # a file: braces in an argv word are placeholders
    program.write_text(script)
    fields = {"kind": "command", "argv": [sys.executable, str(program)],
              "resume_argv": [sys.executable, str(program), "resume", "{conversation}"],
              "output_format": "codex-json"}
    return CommandBackendConfig(**(fields | changes))


async def run(agent: CommandAgent, prompt: str) -> RecordedOutput:
    output = RecordedOutput()
    with trio.fail_after(GUARD):
        await agent.turn(prompt, output)
    return output


async def test_the_conversation_the_output_names_is_resumed_and_each_turn_counts_its_own(tmp_path):
    agent = CommandBackend("fake", fake_codex(tmp_path)).agent(info(tmp_path))
    first = await run(agent, "alpha one\n")
    assert first.given == "in thr-alpha: alpha one\n" and first.spent == Usage(input_tokens=109)
    second = await run(agent, "beta\n")
    assert second.given == "in thr-alpha: beta\n"  # resumed: the id came from the output, no pattern configured
    assert second.spent == Usage(input_tokens=104)  # its own, not the thread's total (213)
    # a restarted server's agent carries on from saved(): the totals it remembered with it
    again = CommandBackend("fake", fake_codex(tmp_path)).agent(info(tmp_path), agent.saved())
    third = await run(again, "gamma\n")
    assert third.given == "in thr-alpha: gamma\n" and third.spent == Usage(input_tokens=105)
    again.clear()
    assert "memory" not in again.saved()
    fourth = await run(again, "delta\n")
    assert fourth.given == "in thr-delta: delta\n" and fourth.spent == Usage(input_tokens=105)


async def test_a_failed_first_turn_is_resumed_under_the_id_its_output_named(tmp_path):
    agent = CommandBackend("fake", fake_codex(tmp_path, restart_after_failed_first_turn=False)).agent(info(tmp_path))
    failed = RecordedOutput()
    try:
        await agent.turn("failing\n", failed)
    except TurnFailed as exc:
        assert str(exc) == "exit status 1: the model said no"  # the output's words, not stderr's last line
    else:
        raise AssertionError("the failed turn did not fail")
    assert agent.conversation == "thr-failing"
    assert (await run(agent, "next\n")).given == "in thr-failing: next\n"


async def test_an_output_that_names_no_conversation_is_noted_and_the_next_turn_begins_one(tmp_path):
    silent = "import json; print(json.dumps({'type': 'turn.completed', 'usage': {}}))"
    agent = CommandBackend("fake", fake_codex(tmp_path, silent)).agent(info(tmp_path))
    first = await run(agent, "alpha\n")
    assert any("named none" in note and "begins a new conversation" in note for note in first.notes), first.notes
    assert agent.begins_conversation


GARBLED = FAKE_CODEX.replace('say(type="turn.completed"', '''print("a line of garbage", flush=True)
say(type="turn.completed"''') + '''print('{"type": "item.completed", "item": {"text": "cut sh', end="", flush=True)  # killed mid-line
'''


async def test_a_garbled_or_cut_line_is_noted_and_neither_fails_the_turn_nor_loses_the_answer(tmp_path):
    agent = CommandBackend("fake", fake_codex(tmp_path, GARBLED)).agent(info(tmp_path))
    output = await run(agent, "alpha\n")
    assert output.given == "in thr-alpha: alpha\n" and output.spent == Usage(input_tokens=105)
    assert [note for note in output.notes if "skipped unread" in note] == [
        "codex: a line of the output is no JSON object, skipped unread: 'a line of garbage'",
        "codex: the output ended in the middle of a line, skipped unread: "
        "'{\"type\": \"item.completed\", \"item\": {\"text\": \"cut sh'"]


async def test_a_structured_run_that_fails_silently_is_not_named_by_its_last_event(tmp_path):
    """A CLI of a structured format that exits non-zero saying nothing on stderr and no failure in its events:
    its last stdout line is an event, JSON, not a reason; the turn says the exit status alone (the events
    are in the log)."""
    script = 'import json, sys\nprint(json.dumps({"type": "thread.started", "thread_id": "t1"}), flush=True)\nsys.exit(4)\n'
    agent = CommandBackend("fake", fake_codex(tmp_path, script)).agent(info(tmp_path))
    output = RecordedOutput()
    with trio.fail_after(GUARD):
        try:
            await agent.turn("hello\n", output)
        except TurnFailed as exc:
            assert str(exc) == "exit status 4", str(exc)
        else:
            raise AssertionError("the turn did not fail")
