"""What the built-in `claude` backend's turns spend, and what `stream` shows of them (stream-json, "claude-json").

Real Claude Code (2.1.332) against the Anthropic stub, whose every reply reports a usage of its own
(stubs/anthropic.py): a session's `usage` must be the sum of what the stub reported for every request of its
turns, counted once each, with the cost Claude Code itself worked out. The budget test drives the backend's
agent directly (the session's budgets are not in this test's reach): the dollars a turn is given reach
claude as --max-budget-usd, and claude stops the run that spends past them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio
from claude_env import claude_env
from harness.turn_output import TurnOutput
from drive import TURN_TIMEOUT, cli_bin
from stubs import Request, ToolCall, directives

from anvilfs.backends.command import CommandBackend
from anvilfs.config.builtin import BUILTIN_BACKENDS
from anvilfs.config.model import CommandBackendConfig
from anvilfs.sessions.backend import SessionInfo, TurnFailed

# Anthropic's keys, as the stub recorded them on each request, and the usage file's
KEYS = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
        "cache_read_tokens": "cache_read_input_tokens", "cache_write_tokens": "cache_creation_input_tokens"}


def writes_notes(cwd: Path):
    """The default script, but "write the notes" is answered with a Write tool call (two requests a turn)."""
    def script(request: Request):
        if not request.after_tool and request.prompt.strip().startswith("write the notes"):
            return ToolCall("Write", {"file_path": str(cwd / "notes.txt"), "content": "hello\n"},
                            text="[stub anthropic] writing the notes")
        return directives(request)
    return script


def summed(requests: list[Request]) -> dict[str, int]:
    return {ours: sum(request.usage.get(theirs, 0) for request in requests) for ours, theirs in KEYS.items()}


def usage_file(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines())


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
    output = TurnOutput(budget_usd_left=left)
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
    assert {key: getattr(output.total, key) for key in KEYS} == summed(requests)
    assert output.total.cost_usd and output.total.cost_usd > 0.002


async def test_a_spent_budget_runs_no_claude(tmp_path):
    agent = CommandBackend("claude", CommandBackendConfig(**BUILTIN_BACKENDS["claude"] | {"mcp": False})).agent(
        SessionInfo(name="a", cwd=str(tmp_path)))
    with pytest.raises(TurnFailed, match=r"^budget spent: the session's budgets leave \$0\.000000"):
        await agent.turn("hello", TurnOutput(budget_usd_left=0.0))
    assert agent.pid is None
