"""What the built-in `claude` backend's turns spend, and what `stream` shows of them (stream-json, "claude-json").

Real Claude Code (2.1.332) against the Anthropic stub, whose every reply reports a usage of its own
(stubs/anthropic.py): a session's `usage` must be the sum of what the stub reported for every request of its
turns, counted once each, with the cost Claude Code itself worked out. A session's budget reaches claude as
--max-budget-usd (what the budgets leave), and claude stops the run that spends past it; the last tests drive
the backend's agent directly with the dollars left, and without any.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio
from claude_env import USAGE_KEYS, claude_env, reported
from harness.recorded_output import RecordedOutput
from spending import check_spending
from drive import TURN_TIMEOUT, agent_server, cli, cli_bin, new_session, turn
from stubs import Request, ToolCall, directives

from anvilfs.backends.command import CommandBackend
from anvilfs.config.builtin import BUILTIN_BACKENDS
from anvilfs.config.model import CommandBackendConfig
from anvilfs.ninep.consts import OREAD
from anvilfs.sessions.backend import SessionInfo, TurnFailed

def writes_notes(cwd: Path):
    """The default script, but "write the notes" is answered with a Write tool call (two requests a turn)."""
    def script(request: Request):
        if not request.after_tool and request.prompt.strip().startswith("write the notes"):
            return ToolCall("Write", {"file_path": str(cwd / "notes.txt"), "content": "hello\n"},
                            text="[stub anthropic] writing the notes")
        return directives(request)
    return script


def usage_file(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines())


def test_two_turns_usage_is_the_sum_of_every_request_the_stub_answered(stub, tmp_path):
    stub.script = writes_notes(tmp_path)
    with agent_server(stub, "claude", env=claude_env(stub)) as srv:
        new_session(srv, "claude", tmp_path, "a")
        with srv.connect(timeout=TURN_TIMEOUT) as client:
            stream = client.open("a/stream", OREAD)  # before the prompt: the next turn, from its start
            out = turn(srv, "a", "write the notes")
            shown = b"".join(client.read_chunks(stream)).decode()
        first = stub.requests("anthropic")
        second_out = turn(srv, "a", "second words")
        spent = usage_file(cli(srv, "read", "agent/a/usage"))
    requests = stub.requests("anthropic")
    assert len(first) == 2 and len(requests) == 3, "a tool call: two requests in the first turn"
    assert out.startswith("[stub anthropic] tool done: File created successfully") and out.count("\n") == 1
    assert second_out == "[stub anthropic] turn 2: you said second words\n"
    assert spent["turns"] == "2" and spent["unpriced_turns"] == "0", spent
    assert {key: int(spent[key]) for key in USAGE_KEYS} == reported(requests), spent
    assert {key: int(spent["last_" + key]) for key in USAGE_KEYS} == reported(requests[2:]), spent
    assert float(spent["cost_usd"]) > float(spent["last_cost_usd"]) > 0, "Claude Code priced both turns"
    # stream: the text as it came and the tool call as one line, no JSON
    lines = shown.splitlines()
    assert lines[0] == "[stub anthropic] writing the notes", shown
    assert lines[1].startswith('[tool Write {"file_path": "') and lines[1].endswith("}]"), shown
    assert lines[2] == out.strip() and len(lines) == 3, shown


def test_the_spending_scenario_holds_for_claude(stub, tmp_path):
    """spending.py: the session's, its bead's and its convoy's usage are what the stub reported; a token budget
    spent holds the next prompt, raising it runs it."""
    with agent_server(stub, "claude", env=claude_env(stub)) as srv:
        new_session(srv, "claude", tmp_path, "dev")
        check_spending(srv, "dev", tmp_path, lambda: reported(stub.requests("anthropic")))


def test_a_failed_turn_names_the_apis_text_and_counts_nothing_spent(stub, tmp_path):
    with agent_server(stub, "claude", env=claude_env(stub)) as srv:
        new_session(srv, "claude", tmp_path, "a")
        turn(srv, "a", "stub:fail 500", expect="error")
        status = cli(srv, "read", "agent/a/status")
        spent = usage_file(cli(srv, "read", "agent/a/usage"))
    assert status.startswith("error exit status 1: API Error: 500 stub model server"), status
    assert spent["turns"] == "1" and spent["input_tokens"] == "0" and spent["cost_usd"] == "0.000000", spent


def test_a_sessions_budget_reaches_claude_which_stops_the_turn_that_spends_past_it(stub, tmp_path):
    """budget=0.002: the whole budget is left as the first turn begins, and claude is told so; its two requests
    cost about $0.0026, so claude ends the run after the second, in error. What they spent is counted, and the
    session, its budget spent, runs no more prompts."""
    stub.script = writes_notes(tmp_path)
    with agent_server(stub, "claude", env=claude_env(stub)) as srv:
        new_session(srv, "claude", tmp_path, "a", "budget=0.002")
        turn(srv, "a", "write the notes", expect="error")
        status = cli(srv, "read", "agent/a/status")
        spent = usage_file(cli(srv, "read", "agent/a/usage"))
    assert status.strip() == "error exit status 1: Reached maximum budget ($0.002)", status
    assert {key: int(spent[key]) for key in USAGE_KEYS} == reported(stub.requests("anthropic")), spent
    assert float(spent["cost_usd"]) > 0.002, spent


@pytest.mark.parametrize("left", [0.002, 0.01])
async def test_the_dollars_left_reach_claude_as_its_budget_cap(stub, tmp_path, left):
    """A turn of two requests costs about $0.0026 at Claude Code's price of the stub's model: given $0.002 left,
    claude stops it after the second request (its check comes after each), the answer lost; given $0.01, it
    runs to its end. Both count what their requests spent."""
    stub.script = writes_notes(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = claude_env(stub) | {"HOME": str(home), "PATH": f"{cli_bin('claude')}{os.pathsep}{os.environ['PATH']}"}
    config = CommandBackendConfig(**BUILTIN_BACKENDS["claude"] | {"mcp": False, "env": env})
    agent = CommandBackend("claude", config).agent(SessionInfo(name="a", cwd=str(tmp_path)))
    output = RecordedOutput()
    output.budget_usd_left = left
    with trio.fail_after(TURN_TIMEOUT):
        if left < 0.0026:
            with pytest.raises(TurnFailed, match=r"^exit status 1: Reached maximum budget \(\$0\.002\)$"):
                await agent.turn("write the notes", output)
            assert output.given is None
        else:
            await agent.turn("write the notes", output)
            assert output.given.startswith("[stub anthropic] tool done: File created successfully")
    requests = stub.requests("anthropic")
    assert len(requests) == 2
    assert {key: getattr(output.spent, key) for key in USAGE_KEYS} == reported(requests)
    assert output.spent.cost_usd and output.spent.cost_usd > 0.002


async def test_a_spent_budget_runs_no_claude(tmp_path):
    agent = CommandBackend("claude", CommandBackendConfig(**BUILTIN_BACKENDS["claude"] | {"mcp": False})).agent(
        SessionInfo(name="a", cwd=str(tmp_path)))
    with pytest.raises(TurnFailed, match=r"^budget spent: the session's budgets leave \$0\.000000"):
        output = RecordedOutput()
        output.budget_usd_left = 0.0
        await agent.turn("hello", output)
    assert agent.pid is None
