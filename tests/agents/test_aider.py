"""The real aider (pinned) run by anvilfs's built-in ``aider`` backend against the stub OpenAI chat API.

Each turn is one ``aider --message PROMPT`` run in the session's cwd; its
memory is its chat history file there (one per session), restored by the
next run. Setup: aider_env.py.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from anvilfs.config.builtin import BUILTIN_BACKENDS
from aider_env import DIALECT, aider_config, aider_env, aider_home, chats, missed_edit, project, without_commits
from drive import TURN_TIMEOUT, agent_server, cli, new_session, turn
from spending import check_spending

from stubs import Failure, Request, Text, directives

ANSI = re.compile(r"\x1b\[")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_a_prompt_reaches_the_model_and_the_answer_lands_in_out(stub, tmp_path, stream):
    env = aider_env(stub) if stream else aider_env(stub, AIDER_STREAM="false")  # a user's own choice of aider's
    with agent_server(stub, "aider", env=env, home=aider_home) as srv:
        new_session(srv, "aider", tmp_path, "a")
        out = turn(srv, "a", "hello there")
    [request] = chats(stub)
    assert request.prompt.strip() == "hello there" and request.stream is stream and request.model == "stub-model"
    assert f"[stub {DIALECT}]" in out and "you said hello there" in out
    assert not ANSI.search(out), f"escape codes in out: {out!r}"
    # --yes-always says yes to "create a git repo?": aider tracks its edits in git
    assert (tmp_path / ".git").is_dir()


def test_a_second_turn_continues_the_conversation_until_clear(stub, tmp_path):
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv:
        new_session(srv, "aider", tmp_path, "a")
        first = turn(srv, "a", "remember the word heron")
        turn(srv, "a", "which word was it?")
        cli(srv, "write", "agent/a/ctl", "clear")  # a new {conversation}: a new chat history file
        turn(srv, "a", "after clear")
    second = next(r for r in chats(stub) if r.prompt.strip() == "which word was it?")
    said = [text.strip() for role, text in second.messages if role == "assistant"]
    assert second.mentions("remember the word heron"), second.messages
    assert answer_of(first) in said, f"the first answer {answer_of(first)!r} is not among {said}"
    third = next(r for r in chats(stub) if r.prompt.strip() == "after clear")
    assert not third.mentions("heron"), third.messages


def test_two_sessions_in_two_directories_keep_two_conversations(stub, tmp_path):
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            new_session(srv, "aider", tmp_path / name, name)
        keep_apart(srv, stub, {"a": "alpha", "b": "bravo"})


def test_two_sessions_in_one_directory_keep_two_conversations(stub, tmp_path):
    # one chat history file per session (built-in argv), not aider's one .aider.chat.history.md per repository
    cwd = project(tmp_path / "app", {"README.md": "an app\n"})
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv:
        for name in ("a", "b"):
            new_session(srv, "aider", cwd, name)
        keep_apart(srv, stub, {"a": "alpha", "b": "bravo"})
    assert len(list(cwd.glob(".aider.chat.history.anvilfs-*.md"))) == 2


def test_an_edit_in_the_models_answer_lands_in_the_file_and_is_committed(stub, tmp_path):
    cwd = project(tmp_path / "app", {"greet.py": 'print("hello")\n'})
    stub.script = without_commits(edit_greet)
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv:
        new_session(srv, "aider", cwd, "a")
        out = turn(srv, "a", "make greet.py say goodbye stub:edit")
    assert (cwd / "greet.py").read_text() == 'print("goodbye")\n'
    assert "Applied edit to greet.py" in out
    log = git(cwd, "log", "--format=%s", "-1", "--", "greet.py")
    assert log == "[stub] commit of aider's edit", f"aider's commit of its edit: {log!r}"


def test_a_model_error_ends_the_turn_in_error_and_the_session_goes_on(stub, tmp_path):
    # aider retries a 500 and a 429 with backoff for about a minute (its own RETRY_TIMEOUT), here in
    # two sessions at once; a third session's failures stop before aider gives up, so its turn succeeds
    stub.script = flaky(failures=FLAKY)
    sessions = {"e500": "stub:fail 500", "e429": "stub:fail 429", "flaky": "stub:flaky"}
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv:
        for name, prompt in sessions.items():
            (tmp_path / name).mkdir()
            new_session(srv, "aider", tmp_path / name, name)
            cli(srv, "write", f"agent/{name}/in", prompt)
        ended = {name: cli(srv, "read", f"agent/{name}/wait", timeout=RETRIES_TIMEOUT).strip() for name in sessions}
        assert ended == {"e500": "error", "e429": "error", "flaky": "await"}, ended
        for name, said in FAILED.items():  # litellm's error, then aider's word on it
            assert cli(srv, "read", f"agent/{name}/status").strip() == f"error {said}"
        flaky_out = cli(srv, "read", "agent/flaky/out")
        assert "Retrying in" in flaky_out and "you said stub:flaky" in flaky_out, flaky_out
        for name in ("e500", "e429"):
            assert "you said still there?" in turn(srv, name, "still there?")


def test_a_hanging_model_is_ended_by_the_turn_timeout(stub, tmp_path):
    config = aider_config(timeout=HANG_TIMEOUT)
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home, config=config) as srv:
        new_session(srv, "aider", tmp_path, "a")
        cli(srv, "write", "agent/a/in", "stub:hang")
        state = cli(srv, "read", "agent/a/wait", timeout=HANG_TIMEOUT + TURN_TIMEOUT).strip()
        assert state.split()[0] == "error", f"the hung turn ended {state!r}"
        stub.wait_for(lambda r: r.prompt.strip() == "stub:hang", 0, "the prompt that hangs")  # aider did call the model
        assert cli(srv, "read", "agent/a/status").strip() == f"error timed out after {HANG_TIMEOUT} s"
        assert "you said after the hang" in turn(srv, "a", "after the hang")


def test_an_interrupted_first_turn_is_in_the_history_the_next_turn_restores(stub, tmp_path):
    with agent_server(stub, "aider", env=aider_env(stub), home=aider_home) as srv:
        new_session(srv, "aider", tmp_path, "a")
        cli(srv, "write", "agent/a/in", "stub:hang first")
        stub.wait_for(lambda r: r.prompt.strip() == "stub:hang first", TURN_TIMEOUT, "the prompt that hangs")
        cli(srv, "write", "agent/a/ctl", "interrupt")
        assert cli(srv, "read", "agent/a/wait", timeout=TURN_TIMEOUT) == "await\n"
        assert "you said after the interrupt" in turn(srv, "a", "after the interrupt")
    after = next(r for r in chats(stub) if r.prompt.strip() == "after the interrupt")
    assert after.mentions("stub:hang first"), after.messages  # restore_chat_history: the same history file
    assert len(list(tmp_path.glob(".aider.chat.history.anvilfs-*.md"))) == 1  # none orphaned


def test_the_error_pattern_takes_the_error_that_ends_the_output_alone():
    # aider's stdout (--no-pretty) as the tests above see it; the error lines wrapped at 80 columns by aider
    error = ("litellm.InternalServerError: InternalServerError: OpenAIException - stub model \n"
             "server: HTTP 500 as the script said\nThe API provider's servers are down or overloaded.\n")
    head = "\nAider v0.86.2\nModel: openai/stub-model with diff edit format\n\n"
    gave_up = head + (error + "Retrying in 0.2 seconds...\n") * 2 + error + "\n"
    tokens = "Tokens: 2.3k sent, 14 received.\n"
    recovered = head + error + "Retrying in 0.2 seconds...\n[stub openai_chat] answer\n" + tokens
    quoted = head + "[stub openai_chat] you may see\n" + error + tokens
    pattern = re.compile(BUILTIN_BACKENDS["aider"]["error_pattern"])
    found = pattern.search(gave_up)
    assert found and found.group(1) == error.rstrip("\n") and found.start() == len(gave_up) - len(error) - 1
    assert pattern.search(recovered) is None and pattern.search(quoted) is None


# ------------------------------------------------------------ helpers

RETRIES_TIMEOUT = 240  # s: aider's backoff (0.25 s doubling to 32 s), the openai client's, a loaded machine
# aider's first try is three requests (the openai client retries twice itself); then aider says "Retrying in"
FLAKY = 3
FAILED = {
    "e500": "litellm.InternalServerError: InternalServerError: OpenAIException - stub model server: HTTP 500 as "
            "the script said The API provider's servers are down or overloaded.",
    "e429": "litellm.RateLimitError: RateLimitError: OpenAIException - stub model server: HTTP 429 as the script "
            "said The API provider has rate limited you. Try again later or check your quotas.",
}
HANG_TIMEOUT = 45  # s: long enough for aider to start and call the model even on a loaded machine


def answer_of(out: str) -> str:
    """The stub's answer among aider's lines in out."""
    return next(line.strip() for line in out.splitlines() if line.startswith(f"[stub {DIALECT}]"))


def keep_apart(srv, stub, words: dict[str, str]) -> None:
    """Each session is told its own word, then asked again: its second request holds its word alone."""
    for name, word in words.items():
        turn(srv, name, f"{name}: remember {word}")
    for name in words:
        turn(srv, name, f"{name}: again")
    for name, word in words.items():
        again = next(r for r in chats(stub) if r.prompt.strip() == f"{name}: again")
        others = [w for n, w in words.items() if n != name]
        assert again.mentions(f"remember {word}") and not any(again.mentions(w) for w in others), again.messages


def flaky(failures: int):
    """directives, but the first `failures` requests for "stub:flaky" fail with HTTP 500."""
    failed = []

    def script(request: Request):
        if "stub:flaky" in request.prompt and len(failed) < failures:
            failed.append(request)
            return Failure(500)
        return directives(request)
    return script


def edit_greet(request: Request):
    """A SEARCH/REPLACE block for greet.py while the conversation is about stub:edit."""
    if not request.mentions("stub:edit"):
        return directives(request)
    return Text("[stub openai_chat] changing greet.py\n\ngreet.py\n```python\n<<<<<<< SEARCH\nprint(\"hello\")\n"
                "=======\nprint(\"goodbye\")\n>>>>>>> REPLACE\n```\n")


def git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()



def test_what_aider_spends_is_counted_per_session_bead_and_convoy(stub, tmp_path):
    # The first turn's edit does not apply: aider reflects, a second request. Not streamed, so that aider counts
    # what the API reported (a streamed answer's tokens are aider's own count: it asks for no usage in a stream).
    cwd = project(tmp_path / "app", {"greet.py": 'print("hello")\n'})

    def script(request: Request):
        return missed_edit(request) or directives(request)

    def reported() -> dict[str, int]:
        """What the stub reported for the chat requests, as aider tells it: all prompt_tokens sent (it does not
        tell OpenAI's cached tokens apart), completion_tokens received; its commit messages' are not told."""
        return {"input_tokens": sum(r.usage["prompt_tokens"] for r in chats(stub)),
                "output_tokens": sum(r.usage["completion_tokens"] for r in chats(stub))}

    stub.script = without_commits(script)
    with agent_server(stub, "aider", env=aider_env(stub, AIDER_STREAM="false"), home=aider_home) as srv:
        new_session(srv, "aider", cwd, "dev")
        check_spending(srv, "dev", cwd, reported, prompts=("Change greet.py. stub:miss", "Say goodbye."))
    assert len(chats(stub)) == 4, [r.prompt for r in chats(stub)]  # 2 + 1 + the one more
