"""The real Claude Code CLI (2.1.332) through the built-in `claude` backend, against the Anthropic stub.

Each test drives a real `anvilfs serve` with `anvilfs` commands only (write
`in`, read `wait`, `out`, `status`, `pid`), and the built-in backend runs
`claude -p ... --session-id ID`, then `--resume ID`, with the prompt on stdin.

The stub's log is the model's side of the story. Claude Code may send
requests of its own beside the conversation (a title, a token count); none
were seen with claude_env's settings, but the tests look only at the
conversation's requests (main_requests: those that offer tools), so one
that appears in a later release does not break them.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_env import claude_env, main_requests
from drive import TURN_TIMEOUT, agent_server, cli, new_session, turn
from harness.server import AnvilServer
from stubs import Reply, Request, StubModels, ToolCall, directives

from anvilfs.config.builtin import BUILTIN_BACKENDS

HUNG_TIMEOUT = 15  # s: the turn timeout of the hang test; Claude Code reaches the stub in about 0.5 s


@contextlib.contextmanager
def claude_server(stub: StubModels, config: str = "") -> Iterator[AnvilServer]:
    with agent_server(stub, "claude", env=claude_env(stub), config=config) as srv:
        yield srv


def answer(number: int, prompt: str) -> str:
    """What the default script answers, exactly, as `out` must hold it."""
    return f"[stub anthropic] turn {number}: you said {prompt}\n"


def script_with(calls: dict[str, ToolCall]):
    """The default script, but a prompt named in calls is answered with its tool call."""
    def script(request: Request) -> Reply:
        if not request.after_tool and request.prompt.strip() in calls:
            return calls[request.prompt.strip()]
        return directives(request)
    return script


def test_a_prompt_reaches_the_model_and_its_answer_lands_in_out(stub, tmp_path):
    with claude_server(stub) as srv:
        new_session(srv, "claude", tmp_path, "a")
        out = turn(srv, "a", "hello from anvilfs")
        assert cli(srv, "read", "agent/a/wait").strip() == "await"
    (request,) = main_requests(stub)
    assert request.prompt.strip() == "hello from anvilfs"
    assert out == answer(1, "hello from anvilfs"), "out is the answer alone: no escapes, no trailing noise"


def test_a_second_turn_resumes_the_conversation(stub, tmp_path):
    with claude_server(stub) as srv:
        new_session(srv, "claude", tmp_path, "a")
        first = turn(srv, "a", "first words")
        second = turn(srv, "a", "second words")
    assert second == answer(2, "second words")
    resumed = [(role, text.strip()) for role, text in main_requests(stub)[-1].messages]  # `write` ends a line
    assert resumed == [("user", "first words"), ("assistant", first.strip()), ("user", "second words")]


def test_two_sessions_keep_two_conversations(stub, tmp_path):
    prompts = {"a": ["alpha one", "alpha two"], "b": ["bravo one", "bravo two"]}
    with claude_server(stub) as srv:
        for name in prompts:
            new_session(srv, "claude", tmp_path, name)
        for number in (1, 2):  # both sessions' turns at once, each round
            for name, said in prompts.items():
                cli(srv, "write", f"agent/{name}/in", said[number - 1])
            for name, said in prompts.items():
                assert cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip() == "await"
                assert cli(srv, "read", f"agent/{name}/out") == answer(number, said[number - 1])
    requests = main_requests(stub)
    assert len(requests) == 4, [request.users for request in requests]
    for request in requests:
        own = prompts["a" if request.prompt.startswith("alpha") else "b"]
        assert [text.strip() for text in request.users] == own[: len(request.users)]


def test_a_tool_call_writes_a_file_in_the_sessions_cwd(stub, tmp_path):
    target = tmp_path / "notes.txt"
    content = "written by Claude Code's Write tool\nfor the stub\n"
    stub.script = script_with({"write the notes": ToolCall("Write", {"file_path": str(target), "content": content},
                                                            text="[stub anthropic] writing the notes")})
    with claude_server(stub) as srv:
        new_session(srv, "claude", tmp_path, "a")
        out = turn(srv, "a", "write the notes")
    assert target.read_text() == content
    told = main_requests(stub)[-1]
    assert told.after_tool and "File created successfully" in told.messages[-1][1], told.messages
    assert out.startswith("[stub anthropic] tool done: File created successfully")


def test_other_programs_and_paths_outside_the_cwd_are_refused(stub, tmp_path):
    cwd, outside = tmp_path / "work", tmp_path / "outside.txt"
    cwd.mkdir()
    by_python = cwd / "by-python"
    stub.script = script_with({
        "write outside": ToolCall("Write", {"file_path": str(outside), "content": "no\n"}),
        "run python": ToolCall("Bash", {"command": f"python3 -c 'open(\"{by_python}\", \"w\")'",
                                        "description": "make a file with python"}),
    })
    with claude_server(stub) as srv:
        new_session(srv, "claude", cwd, "a")
        turn(srv, "a", "write outside")
        turn(srv, "a", "run python")
    assert not outside.exists() and not by_python.exists()
    results = [request.messages[-1][1] for request in main_requests(stub) if request.after_tool]
    assert len(results) == 2, results
    assert "requested permissions to write" in results[0]
    assert "requires approval" in results[1]


@pytest.mark.parametrize(("status", "says"), [
    (500, "API Error: 500 stub model server: HTTP 500 as the script said. This is a server-side issue"),
    (429, "API Error: Request rejected (429) · stub model server: HTTP 429 as the script said"),
])
def test_a_model_error_ends_the_turn_in_error_and_the_session_goes_on(stub, tmp_path, status, says):
    with claude_server(stub) as srv:
        new_session(srv, "claude", tmp_path, "a")
        turn(srv, "a", f"stub:fail {status}", expect="error")
        assert cli(srv, "read", "agent/a/wait").strip() == "error"
        # Claude Code says why on stdout (stderr is empty): the backend names its last line
        said = cli(srv, "read", "agent/a/status")
        assert said.startswith(f"error exit status 1: {says}"), said
        assert f"a: error exit status 1: {says}" in cli(srv, "read", "agent/errors")  # where every error's text is
        # Claude Code kept the failed prompt: the next turn resumes that conversation (restart_after_failed_first_turn)
        assert turn(srv, "a", "after the failure") == answer(2, "after the failure")
        assert users(main_requests(stub)[-1]) == [f"stub:fail {status}", "after the failure"]


def test_a_hung_cli_is_killed_by_the_turn_timeout(stub, tmp_path):
    with claude_server(stub, claude_config(timeout=HUNG_TIMEOUT)) as srv:
        new_session(srv, "claude", tmp_path, "a")
        cli(srv, "write", "agent/a/in", "stub:hang")
        stub.wait_for(lambda request: request.prompt.strip() == "stub:hang", TURN_TIMEOUT, "the hanging prompt")
        pid = int(cli(srv, "read", "agent/a/pid"))
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "claude", "pid is not the hanging claude's"
        state = cli(srv, "read", "agent/a/wait", timeout=TURN_TIMEOUT)
        assert state.split()[0] == "error", state
        said = cli(srv, "read", "agent/a/status")
        assert said.strip() == f"error timed out after {HUNG_TIMEOUT} s", said
        assert not running(pid), f"claude (pid {pid}) outlived its turn's timeout"
        # Claude Code had saved the prompt it hung on: the next turn resumes that conversation
        assert turn(srv, "a", "still there") == answer(2, "still there")
        assert users(main_requests(stub)[-1]) == ["stub:hang", "still there"]


def test_an_interrupted_first_turn_is_resumed_by_the_next(stub, tmp_path):
    with claude_server(stub) as srv:
        new_session(srv, "claude", tmp_path, "a")
        interrupted_first_turn(srv, stub)
        assert turn(srv, "a", "after the interrupt") == answer(2, "after the interrupt")
        # turn 1 is in the conversation the stub sees (Claude Code answered it "No response requested." itself)
        assert users(main_requests(stub)[-1]) == ["stub:hang first", "after the interrupt"]
        assert len(saved_conversations(srv)) == 1  # none orphaned


def test_a_first_turn_claude_saved_nothing_of_is_begun_again_under_its_id(stub, tmp_path):
    """Cut short in its first second, Claude Code saves nothing: --resume then says there is no such
    conversation, and the prompt runs again at once with --session-id, the same id."""
    with claude_server(stub) as srv:
        new_session(srv, "claude", tmp_path, "a")
        interrupted_first_turn(srv, stub)
        [saved] = saved_conversations(srv)
        saved.unlink()  # as if it had been cut short before it saved anything
        assert turn(srv, "a", "after the interrupt") == answer(1, "after the interrupt")
        log = cli(srv, "read", "agent/a/log")
        assert f"No conversation found with session ID: {saved.stem}" in log, log
        assert "runs again with argv, beginning the conversation" in log, log
        assert [path.name for path in saved_conversations(srv)] == [saved.name]  # the same id
        assert turn(srv, "a", "and then") == answer(2, "and then")


def interrupted_first_turn(srv: AnvilServer, stub: StubModels) -> None:
    """A first turn whose model hangs, interrupted once Claude Code has asked the model."""
    cli(srv, "write", "agent/a/in", "stub:hang first")
    stub.wait_for(lambda request: request.prompt.strip() == "stub:hang first", TURN_TIMEOUT, "the hanging prompt")
    cli(srv, "write", "agent/a/ctl", "interrupt")
    assert cli(srv, "read", "agent/a/wait", timeout=TURN_TIMEOUT) == "await\n"
    status = cli(srv, "read", "agent/a/status")
    assert "interrupted" in status, status


def saved_conversations(srv: AnvilServer) -> list[Path]:
    """The conversations Claude Code keeps (~/.claude/projects/<cwd>/<id>.jsonl) in the server's HOME."""
    return sorted((srv.base / "home" / ".claude" / "projects").glob("*/*.jsonl"))


def users(request: Request) -> list[str]:
    return [text.strip() for role, text in request.messages if role == "user"]


def claude_config(**changes) -> str:
    """A config file whose [backends.claude] is the built-in one with changes (a table replaces it whole)."""
    table = BUILTIN_BACKENDS["claude"] | changes
    return "[backends.claude]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
