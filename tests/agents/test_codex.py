"""The real OpenAI Codex CLI (pinned) through anvilfs's built-in `codex` backend, against a stub Responses API.

Each test drives a real ``anvilfs serve`` with the ``anvilfs`` client: a
prompt written to ``in``, ``wait``, ``out``. codex finds its provider (the
stub, codex_env.py) in ~/.codex/config.toml under the server's private HOME.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from codex_env import KEY, MODEL, backend_config, codex_env, codex_home
from drive import TURN_TIMEOUT, agent_server, cli, new_session, next_stream, turn
from harness import agent_clis
from spending import check_spending
from stubs import Failure, Reply, Request, StubModels, ToolCall, directives
from stubs.openai_responses import counted

DIALECT = "openai-responses"
TAG = f"[stub {DIALECT}]"


def codex_server(stub: StubModels, config: str = ""):
    return agent_server(stub, "codex", env=codex_env(), home=codex_home(stub), config=config)


def answered(stub: StubModels, prompt: str) -> Request:
    """The request whose last user text is prompt (waiting for it, with a deadline)."""
    return stub.wait_for(lambda r: r.dialect == DIALECT and r.prompt.strip() == prompt, what=f"request for {prompt!r}")


def session_ids(stub: StubModels, *prompts: str) -> set[str]:
    """The codex session ids (its session-id header) of the requests for these prompts."""
    return {answered(stub, prompt).headers.get("session-id", "") for prompt in prompts}


def said(request: Request) -> list[tuple[str, str]]:
    """The request's conversation, each text stripped (a prompt written to `in` ends with a newline)."""
    return [(role, text.strip()) for role, text in request.messages]


def users(request: Request) -> list[str]:
    return [text for role, text in said(request) if role == "user"]


def scripted(replies: dict[str, Callable[[Request], Reply]]) -> Callable[[Request], Reply]:
    """A script: a prompt containing a key gets that reply until its tool has answered; else directives."""
    def script(request: Request) -> Reply:
        for word, reply in replies.items():
            if word in request.prompt and not request.after_tool:
                return reply(request)
        return directives(request)
    return script


def test_a_prompt_reaches_the_model_and_the_answer_alone_is_out(stub, tmp_path):
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path, "a")
        out = turn(srv, "a", "hello codex")  # wait said await
        request = answered(stub, "hello codex")
    assert out == f"{TAG} turn 1: you said hello codex\n"  # no header, no ANSI: codex's stderr has those
    assert (request.path, request.model, request.stream) == ("/v1/responses", MODEL, True)
    assert request.headers.get("authorization") == f"Bearer {KEY}"  # the provider's env_key, from the agent's env
    assert "apply_patch" in request.tools and "exec_command" in request.tools
    assert request.body["input"][-1]["role"] == "user"


def test_a_second_turn_resumes_codex_s_own_session(stub, tmp_path):
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path, "a")
        first = turn(srv, "a", "the first words")
        second = turn(srv, "a", "the second words")
        log = cli(srv, "read", "agent/a/log")
    assert second == f"{TAG} turn 2: you said the second words\n"
    resumed = answered(stub, "the second words")
    assert said(resumed) == [("user", "the first words"), ("assistant", first.strip()), ("user", "the second words")]
    # the id anvilfs learnt from codex's output (thread.started) is the one codex sends as its session's: the
    # same both turns
    ids = session_ids(stub, "the first words", "the second words")
    assert len(ids) == 1 and re.fullmatch(r"[0-9a-f-]{36}", next(iter(ids))), ids
    assert log.count(f"codex thread {next(iter(ids))}") == 2, log  # both runs named it, in the transcript


def overlapping(prompts: set[str]) -> Callable[[Request], Reply]:
    """A script that answers the first request of each prompt only once all of them have arrived."""
    barrier = threading.Barrier(len(prompts), timeout=TURN_TIMEOUT / 3)

    def script(request: Request) -> Reply:
        if request.prompt.strip() in prompts and len(request.users) == 1:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                return Failure(500, f"stub: the first turns of {sorted(prompts)} did not run at once")
        return directives(request)
    return script


def test_two_sessions_keep_two_conversations(stub, tmp_path):
    # The two first turns run at once (the stub holds each until both have come), so each
    # session must learn its id from its own turn's stderr, not the other's.
    stub.script = overlapping({"alpha one", "beta one"})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path / "a", "a")
        new_session(srv, "codex", tmp_path / "b", "b")
        cli(srv, "write", "agent/a/in", "alpha one")
        cli(srv, "write", "agent/b/in", "beta one")
        for name in "ab":
            state = cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip()
            assert state == "await", f"{name}: {state}: " + cli(srv, "read", "agent/errors")
        assert turn(srv, "b", "beta two") == f"{TAG} turn 2: you said beta two\n"
        assert turn(srv, "a", "alpha two") == f"{TAG} turn 2: you said alpha two\n"
        assert turn(srv, "a", "alpha three") == f"{TAG} turn 3: you said alpha three\n"
    assert users(answered(stub, "alpha three")) == ["alpha one", "alpha two", "alpha three"]
    assert users(answered(stub, "beta two")) == ["beta one", "beta two"]
    alpha = session_ids(stub, "alpha one", "alpha two", "alpha three")
    beta = session_ids(stub, "beta one", "beta two")
    assert len(alpha) == len(beta) == 1 and alpha != beta, (alpha, beta)


PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+written by codex's apply_patch\n*** End Patch\n"


def test_codex_s_tools_write_in_the_session_s_cwd_and_only_there(stub, tmp_path):
    # outside both the cwd and /tmp (which the sandbox also lets codex write): the test cache
    outside = Path(tempfile.mkdtemp(prefix="codex-outside.", dir=agent_clis.cache_dir()))
    shell = f"echo from the shell >> notes.txt; echo escaped > {outside}/escaped.txt"
    stub.script = scripted({"patch it": lambda r: ToolCall("apply_patch", {"input": PATCH}, "patching"),
                            "shell it": lambda r: ToolCall("exec_command", {"cmd": shell})})
    try:
        with codex_server(stub) as srv:
            new_session(srv, "codex", tmp_path, "a")
            patched = turn(srv, "a", "patch it")
            shelled = turn(srv, "a", "shell it")  # a resumed turn: its sandbox is workspace-write too
        escaped = (outside / "escaped.txt").exists()
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    assert (tmp_path / "notes.txt").read_text() == "written by codex's apply_patch\nfrom the shell\n"
    assert not escaped, "codex's sandbox let its shell write outside the session's cwd"
    assert patched.startswith(f"{TAG} tool done: ") and "A notes.txt" in patched, patched
    assert "patching" not in patched  # out is the last message, not the text said before the call
    assert "Read-only file system" in shelled, shelled  # the tool's output: the sandbox refused
    offered = {tool.get("name"): tool for tool in answered(stub, "patch it").body["tools"]}
    assert offered["apply_patch"]["type"] == "custom"  # freeform: its call is a custom_tool_call with the patch


def test_an_error_from_the_model_ends_the_turn_and_the_session_goes_on(stub, tmp_path):
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path, "a")
        turn(srv, "a", "hello")
        turn(srv, "a", "stub:fail 500", expect="error")
        status_500 = cli(srv, "read", "agent/a/status")
        turn(srv, "a", "stub:fail 429", expect="error")
        status_429 = cli(srv, "read", "agent/a/status")
        after = turn(srv, "a", "hello again")
        log = cli(srv, "read", "agent/a/log")
    # codex's own words (its turn.failed event), in status and the log
    for status, number in ((status_500, 2), (status_429, 3)):
        assert status.startswith("error exit status 1: "), status
        assert f"--- failed {number} at " in log and status.removeprefix("error ").strip() in log, log
    assert "We’re currently experiencing high demand" in status_500, status_500
    assert "exceeded retry limit, last status: 429 Too Many Requests" in status_429, status_429
    # the same conversation goes on: codex kept the failed prompts in it
    assert after == f"{TAG} turn 4: you said hello again\n"
    assert len(session_ids(stub, "hello", "stub:fail 500", "stub:fail 429", "hello again")) == 1


def test_a_first_turn_that_fails_is_kept_and_the_next_turn_resumes_it(stub, tmp_path):
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path, "a")
        turn(srv, "a", "stub:fail 500", expect="error")
        # the id is read from the failed turn's header: codex kept the failed prompt in that session
        assert turn(srv, "a", "hello") == f"{TAG} turn 2: you said hello\n"
        assert users(answered(stub, "hello")) == ["stub:fail 500", "hello"]
        assert len(session_ids(stub, "stub:fail 500", "hello")) == 1
        assert len(rollouts(srv)) == 1  # none orphaned


def test_a_first_turn_codex_saved_nothing_of_is_begun_again(stub, tmp_path):
    """Cut short as it started, codex has printed its id but written no session: its resume says so
    ("no rollout found"), and the prompt runs again at once as a first turn."""
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path, "a")
        turn(srv, "a", "stub:fail 500", expect="error")
        [rollout] = rollouts(srv)
        rollout.unlink()  # as if it had been cut short before it wrote it
        assert turn(srv, "a", "hello") == f"{TAG} turn 1: you said hello\n"
        log = cli(srv, "read", "agent/a/log")
        assert "no rollout found for thread id" in log and "runs again with argv" in log, log
        assert turn(srv, "a", "more") == f"{TAG} turn 2: you said more\n"  # the new session, resumed


def rollouts(srv) -> list[Path]:
    """The sessions codex keeps (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl) in the server's HOME."""
    return sorted((srv.base / "home" / ".codex" / "sessions").rglob("rollout-*.jsonl"))


HANG_TIMEOUT = 15  # s: codex reaches the stub within it on a loaded machine (0.3 s on a quiet one)


def test_a_codex_that_hangs_is_killed_by_the_turn_timeout(stub, tmp_path):
    with codex_server(stub, config=backend_config(timeout=HANG_TIMEOUT)) as srv:
        new_session(srv, "codex", tmp_path, "a")
        turn(srv, "a", "hello")
        turn(srv, "a", "stub:hang", expect="error")
        status = cli(srv, "read", "agent/a/status")
        answered(stub, "stub:hang")  # it was the model that did not answer, not codex that did not start
        after = turn(srv, "a", "after the hang")
    assert status == f"error timed out after {HANG_TIMEOUT} s\n", status
    assert after.startswith(f"{TAG} turn ") and after.endswith("you said after the hang\n"), after
    assert users(answered(stub, "after the hang"))[0] == "hello"  # the session's conversation, resumed


def test_an_api_codex_cannot_reach_is_bounded_by_the_timeout(stub, tmp_path):
    # why the built-in sets a timeout: codex waits for the network for ever, retries or not
    with StubModels() as gone:
        pass  # its port, closed: nothing listens there now
    with agent_server(stub, "codex", env=codex_env(), home=codex_home(gone),
                      config=backend_config(timeout=HANG_TIMEOUT)) as srv:
        new_session(srv, "codex", tmp_path, "a")
        turn(srv, "a", "hello", expect="error")
        status = cli(srv, "read", "agent/a/status")
        log = cli(srv, "read", "agent/a/log")
    assert status == f"error timed out after {HANG_TIMEOUT} s\n", status
    assert "Reconnecting... waiting for network" in log, log


def test_what_codex_spends_is_counted_per_session_bead_and_convoy(stub, tmp_path):
    # the first turn runs a shell command: two requests; codex reports the thread's running totals, and each
    # turn counts what it added
    stub.script = scripted({"Write": lambda r: ToolCall("exec_command", {"cmd": "echo hi > hi.txt"}, "writing")})
    with codex_server(stub) as srv:
        new_session(srv, "codex", tmp_path, "dev")
        with next_stream(srv, "dev") as first_turn:
            check_spending(srv, "dev", tmp_path, lambda: counted(stub.requests(DIALECT)),
                           prompts=("Write hi.txt.", "Say goodbye."))
            stream = first_turn()
        out = cli(srv, "read", "agent/dev/out")
    assert len(stub.requests(DIALECT)) == 4, [r.prompt for r in stub.requests(DIALECT)]  # 2 + 1 + the one more
    assert (tmp_path / "hi.txt").read_text() == "hi\n"
    # stream showed the turn readably as it went: the message, the call as one line, the last message
    assert stream.startswith("writing\n[tool shell /bin/bash -lc 'echo hi > hi.txt']\n[stub openai-responses] tool "
                             "done: "), stream
    assert out == f"{TAG} turn 3: you said One more, please.\n"  # out: the answer alone
