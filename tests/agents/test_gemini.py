"""Gemini CLI 0.61 through anvilfs's built-in ``gemini`` backend, against the stub Gemini API.

Each test runs the real CLI (harness/agent_clis.py) under a real ``anvilfs serve`` and drives it
with ``anvilfs`` commands; gemini_env.py says what the CLI needs and why. The stub's answers say
"[stub gemini]"; its requests are the evidence of what the CLI sent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from drive import TURN_TIMEOUT, agent_server, cli, new_session, next_stream, turn
from gemini_env import GeminiHome, gemini_config, gemini_env
from spending import check_spending

from stubs import Request, StubModels, ToolCall, directives
from stubs.gemini import counted


@pytest.fixture
def env(stub: StubModels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return gemini_env(stub, tmp_path_factory.mktemp("gemini-tmp"))


def main_calls(stub: StubModels) -> list[Request]:
    """The conversation's requests (streamed), not the CLI's side calls such as routing."""
    return [r for r in stub.requests("gemini") if r.stream]


def said(request: Request) -> list[tuple[str, str]]:
    """The request's conversation, each text stripped (``anvilfs write`` ends a prompt with a newline)."""
    return [(role, text.strip()) for role, text in request.messages]


def failing_turn(srv, name: str, prompt: str) -> str:
    """Send prompt, wait for the turn's end, which must be ``error``; ``status``, which says why."""
    cli(srv, "write", f"agent/{name}/in", prompt)
    return ended_in_error(srv, name)


def ended_in_error(srv, name: str) -> str:
    state = cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip()
    assert state == "error", f"the turn of {name} ended {state!r}, not in error"
    return cli(srv, "read", f"agent/{name}/status").strip()


def test_a_prompt_reaches_the_model_and_only_the_answer_is_out(stub, env, tmp_path):
    home = GeminiHome(tmp_path, model=None)  # the CLI's default model, "auto": it asks a router first
    with agent_server(stub, "gemini", env=env, home=home) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        assert turn(srv, "a", "hello gemini") == "[stub gemini] turn 1: you said hello gemini\n"
        (call,) = main_calls(stub)
        assert said(call) == [("user", "hello gemini")]
        assert call.headers.get("x-goog-api-key") == "dummy-key-for-the-stub"
        assert any(not r.stream for r in stub.requests("gemini")), "no routing call: is the model still auto?"
        assert stub.unknown == []


def test_a_second_turn_resumes_the_conversation(stub, env, tmp_path):
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        turn(srv, "a", "first words")
        assert "turn 2: you said second words" in turn(srv, "a", "second words")
        assert said(main_calls(stub)[-1]) == [
            ("user", "first words"), ("assistant", "[stub gemini] turn 1: you said first words"),
            ("user", "second words")]


def test_two_sessions_keep_two_conversations(stub, env, tmp_path):
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        for name in ("a", "b"):  # one folder: one Gemini project holds both conversations
            new_session(srv, "gemini", tmp_path, name)
        turns_at_once(srv, {"a": "apples", "b": "bananas"})
        outs = turns_at_once(srv, {"a": "apricots", "b": "blueberries"})
        assert "turn 2: you said apricots" in outs["a"] and "turn 2: you said blueberries" in outs["b"]
        for first, then in (("apples", "apricots"), ("bananas", "blueberries")):
            (call,) = [r for r in main_calls(stub) if r.prompt.strip() == then]
            assert said(call)[::2] == [("user", first), ("user", then)]


def turns_at_once(srv, prompts: dict[str, str]) -> dict[str, str]:
    """A prompt to each session, all sent before any is waited for; each session's ``out``."""
    for name, prompt in prompts.items():
        cli(srv, "write", f"agent/{name}/in", prompt)
    for name in prompts:
        state = cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip()
        assert state == "await", f"the turn of {name} ended {state!r}: " + cli(srv, "read", f"agent/{name}/status")
    return {name: cli(srv, "read", f"agent/{name}/out") for name in prompts}


def test_a_conversation_begun_in_an_earlier_minute_survives_another_sessions_start(stub, env, tmp_path):
    # Gemini CLI names a conversation's file by the minute it began; a resume in a later minute leaves
    # an empty file of the same short id, which the next start of another session would take for a
    # broken one and delete with the conversation (gemini-cli#27368) unless sessionRetention is off.
    # Renaming the file to an earlier minute is what the clock would have done, without the wait.
    home = GeminiHome(tmp_path)
    with agent_server(stub, "gemini", env=env, home=home) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        turn(srv, "a", "before")
        (file,) = home.chats(tmp_path).glob("session-*.jsonl")
        file.rename(file.with_name("session-2000-01-01T00-00-" + file.name.rsplit("-", 1)[1]))
        turn(srv, "a", "a minute later")
        new_session(srv, "gemini", tmp_path, "b")
        turn(srv, "b", "another session")
        assert "turn 3: you said still there" in turn(srv, "a", "still there")


def test_a_tool_call_writes_a_file_in_the_sessions_cwd(stub, env, tmp_path):
    def script(request: Request):
        if "please write" in request.prompt and not request.after_tool:
            return ToolCall("write_file", {"file_path": "notes/hello.txt", "content": "from the stub's tool call\n"})
        return directives(request)

    stub.script = script
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        out = turn(srv, "a", "please write a note")
        assert (tmp_path / "notes" / "hello.txt").read_text() == "from the stub's tool call\n"
        first, then = main_calls(stub)
        # auto_edit: the edit tools run unasked; no shell tool is offered
        assert "write_file" in first.tools and "run_shell_command" not in first.tools
        role, result = then.messages[-1]
        assert role == "tool" and "/notes/hello.txt" in result
        assert out == f"[stub gemini] tool done: {result[:200]}\n"  # the answer only: no tool display


@pytest.mark.parametrize(("status", "says"), [
    (500, '[API Error: {"error":{"code":500,"message":"stub model server: HTTP 500 as the script said"'),
    (429, "[API Error: stub model server: HTTP 429 as the script said] Please wait and try again later."),
], ids=["500", "429"])
def test_a_model_error_ends_the_turn_and_the_conversation_goes_on(stub, env, tmp_path, status, says):
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        turn(srv, "a", "one")
        # the API's own text, from the result of its stream-json output (its exit status varies: 244, 173)
        failed = failing_turn(srv, "a", f"stub:fail {status}")
        assert re.match(r"error exit status \d+: ", failed) and says in failed, failed
        assert list(Path(env["TMPDIR"]).glob("gemini-client-error-*.json")), "its error report is not in TMPDIR"
        assert "turn 2: you said two" in turn(srv, "a", "two")  # the CLI keeps no failed prompt
        assert [text for role, text in said(main_calls(stub)[-1]) if role == "user"] == ["one", "two"]


def test_a_failed_first_turn_leaves_the_session_usable(stub, env, tmp_path):
    # the CLI then will neither resume that id nor start it again: the next turn begins a new one
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        failing_turn(srv, "a", "stub:fail 429")
        assert "turn 1: you said hello" in turn(srv, "a", "hello")
        assert "turn 2: you said again" in turn(srv, "a", "again")


def test_a_hanging_model_is_killed_by_the_turn_timeout(stub, env, tmp_path):
    config = gemini_config(timeout=20)  # s: room for the CLI to start (about 2 s) on a loaded machine
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path), config=config) as srv:
        new_session(srv, "gemini", tmp_path, "a")
        cli(srv, "write", "agent/a/in", "stub:hang")
        stub.wait_for(lambda r: r.prompt.strip() == "stub:hang", timeout=TURN_TIMEOUT, what="the hanging request")
        pid = cli(srv, "read", "agent/a/pid").strip()
        assert pid.isdigit(), f"no pid while the turn hangs: {pid!r}"
        assert ended_in_error(srv, "a") == "error timed out after 20 s"
        assert living_in_group(int(pid)) == [], "the CLI's processes outlived the timeout"
        assert "turn 1: you said awake" in turn(srv, "a", "awake")


def test_an_untrusted_folder_is_refused_in_the_clis_words(stub, env, tmp_path):
    trusted, other = tmp_path / "trusted", tmp_path / "other"
    trusted.mkdir(), other.mkdir()
    with agent_server(stub, "gemini", env=env, home=GeminiHome(trusted)) as srv:
        new_session(srv, "gemini", other, "a")
        status = failing_turn(srv, "a", "hello")
        assert status.startswith("error exit status 55: Gemini CLI is not running in a trusted directory.")
        assert "\x1b[" not in status  # NO_COLOR: its words without escape codes
        assert stub.requests() == []


def living_in_group(group: int) -> list[int]:
    """The pids of the processes of process group ``group`` still alive (a zombie is not)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:
            continue  # gone meanwhile
        if int(pgrp) == group and state != "Z":
            found.append(int(stat.parent.name))
    return found


def test_what_gemini_spends_is_counted_per_session_bead_and_convoy(stub, env, tmp_path):
    # the first turn writes a file: two requests; each run's stats are its own requests'
    def script(request: Request):
        if "Write" in request.prompt and not request.after_tool:
            return ToolCall("write_file", {"file_path": "hi.txt", "content": "hi\n"}, "writing")
        return directives(request)

    stub.script = script
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "dev")
        with next_stream(srv, "dev") as first_turn:
            check_spending(srv, "dev", tmp_path, lambda: counted(stub.requests("gemini")),
                           prompts=("Write hi.txt.", "Say goodbye."))
            stream = first_turn()
        out = cli(srv, "read", "agent/dev/out")
    assert (tmp_path / "hi.txt").read_text() == "hi\n"
    assert len(main_calls(stub)) == 4, [r.prompt for r in stub.requests("gemini")]  # 2 + 1 + the one more
    # stream showed the turn readably as it went: the text, the call as one line, the answer
    assert stream.startswith('writing\n[tool write_file {"file_path": "hi.txt", "content": "hi\\n"}]\n'
                             '[stub gemini] tool done: '), stream
    assert out == "[stub gemini] turn 3: you said One more, please.\n"  # out: the answer alone
