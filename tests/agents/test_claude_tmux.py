"""Claude Code's own terminal UI in tmux (built-in backend claude-tmux), its hooks ending the turns.

Real parts: the pinned claude (2.1.332) run by `anvilfs serve`'s tmux backend
on a private tmux server (--tmux-socket), the hooks of
hooks/claude-code-settings.json in the HOME's ~/.claude/settings.json, which
run hooks/anvilfs-status and through it `anvilfs hook` (this checkout's
console script). The stub stands in for the Anthropic API, and nothing else.

`out` must be the answer Claude Code's Stop hook handed in, exactly: the
pane itself holds Claude Code's screen (spinner, box rules, status line).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from anvilfs.client.client import Client
from anvilfs.ninep import LocalProtocolError, parse_message
from anvilfs.ninep.messages import Tattach, Twalk, Twrite
from claude_env import USAGE_KEYS, reported
from drive import TURN_TIMEOUT, agent_server, cli, cli_bin, new_session, turn, wait_until
from harness.server import AnvilServer
from harness.tmux import private_tmux
from spending import check_spending
from stubs import Failure, Request, StubModels, ToolCall, directives

HOOKS = Path(__file__).resolve().parents[2] / "hooks"
GATE_DEADLINE = 120  # s: a stub reply held for the test's go-ahead is given up after this (the test then fails)


def claude_home(cwd: Path):
    """The HOME Claude Code needs to run its UI unasked: onboarding done, cwd trusted, anvilfs's hooks set."""
    def make(home: Path) -> None:
        config = {"hasCompletedOnboarding": True, "projects": {str(cwd): {"hasTrustDialogAccepted": True}}}
        (home / ".claude.json").write_text(json.dumps(config))
        (home / ".claude").mkdir()
        (home / ".claude" / "settings.json").write_text((HOOKS / "claude-code-settings.json").read_text())
    return make


def claude_env(stub: StubModels) -> dict[str, str]:
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "anvilfs").exists():
        pytest.fail(f"no anvilfs command beside {sys.executable}: run the tests with the project's venv "
                    "(scripts/venv test), whose bin has the command the hooks run")
    path = os.pathsep.join([str(HOOKS), str(venv_bin), str(cli_bin("claude")), os.environ.get("PATH", os.defpath)])
    return {"ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_AUTH_TOKEN": "dummy", "PATH": path,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}


@contextlib.contextmanager
def claude_in_tmux(stub: StubModels, tmp_path: Path, config: str = "") -> Iterator[tuple[AnvilServer, str]]:
    """A server whose claude-tmux agents run on a private tmux server; a session `a` in tmp_path/work."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    with private_tmux() as socket, agent_server(stub, "claude", env=claude_env(stub), home=claude_home(cwd),
                                                config=config, args=["--tmux-socket", socket]) as srv:
        new_session(srv, "claude-tmux", cwd, "a")
        yield srv, socket


def answer(n: int, prompt: str) -> str:
    return f"[stub anthropic] turn {n}: you said {prompt}\n"


def hook_writes(srv: AnvilServer, session: str = "a") -> list[tuple[str, str]]:
    """(file, text) of each write made as uname `session` (its agent's hooks), in order, from the server's 9P trace."""
    unames, names, writes = {}, {}, []
    for line in srv.trace().splitlines():
        connection, arrow, text = line.partition(" -> ")
        try:
            message = parse_message(text) if arrow else None
        except LocalProtocolError:
            continue  # a long write's data is shortened in the trace
        if isinstance(message, Tattach):
            unames[connection] = message.uname
        elif isinstance(message, Twalk) and message.wnames:
            names[connection, message.newfid] = message.wnames[-1]
        elif isinstance(message, Twrite) and unames.get(connection) == session:
            writes.append((names.get((connection, message.fid), "?"), message.data.decode()))
    return writes


def test_a_typed_prompt_is_answered_and_out_is_the_answer_the_hook_handed_in(stub, tmp_path):
    with claude_in_tmux(stub, tmp_path) as (srv, _):
        assert turn(srv, "a", "hello") == answer(1, "hello")  # no spinner, no box rules: the answer alone
        assert [r.prompt for r in stub.requests("anthropic")] == ["hello"]
        # UserPromptSubmit said running; Stop handed in the answer, which ended the turn (no await after it)
        assert hook_writes(srv) == [("status", "running\n"), ("out", answer(1, "hello"))]
        log = cli(srv, "read", "agent/a/log")
        assert log.endswith("\n" + answer(1, "hello")) and "--- answer 1 at " in log, log


def test_a_second_turn_continues_the_conversation(stub, tmp_path):
    with claude_in_tmux(stub, tmp_path) as (srv, _):
        assert turn(srv, "a", "hello") == answer(1, "hello")
        assert turn(srv, "a", "and again") == answer(2, "and again")
        said = [pair for pair in stub.requests("anthropic")[-1].messages if pair[0] != "system"]
        assert said == [("user", "hello"), ("assistant", answer(1, "hello").strip()), ("user", "and again")], said


def test_a_prompt_typed_before_claude_codes_input_is_ready_still_runs(stub, tmp_path):
    """Typed at once (ready_seconds = 0, the prompt queued with the session's `new`), the Enter is lost (Claude
    Code keeps the text): pressed again, it runs. The log's note says the Enter was pressed again."""
    config = ('[backends.claude-tmux]\nkind = "tmux"\nargv = ["claude", "--session-id", "{conversation}"]\n'
              'resume_argv = ["claude", "--resume", "{conversation}"]\nready_seconds = 0\n')
    cwd = tmp_path / "work"
    cwd.mkdir()
    with private_tmux() as socket, agent_server(stub, "claude", env=claude_env(stub), home=claude_home(cwd),
                                                config=config, args=["--tmux-socket", socket]) as srv:
        with connected(srv) as client:  # one connection, two writes: the prompt waits for the program's start alone
            client.write_file("ctl", f"new claude-tmux {cwd} name=a".encode())
            client.write_file("a/in", b"at once")
        assert cli(srv, "read", "agent/a/wait", timeout=TURN_TIMEOUT) == "await\n", cli(srv, "read", "agent/a/log")
        assert cli(srv, "read", "agent/a/out") == answer(1, "at once")
        assert [r.prompt for r in stub.requests("anthropic")] == ["at once"]
        log = cli(srv, "read", "agent/a/log")
        # the premise: Claude Code had lost the first Enter (were it ready that soon, this would prove nothing)
        assert "Enter pressed again (2 of 3)" in log, log


@contextlib.contextmanager
def connected(srv: AnvilServer) -> Iterator[Client]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(srv.socket))
    with Client(sock, uname="test") as client:
        yield client


class Gate:
    """A stub script that holds the answer to a prompt saying `stub:gate` until the test opens the gate."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def __call__(self, request: Request):
        if "stub:gate" in request.prompt.split() and not request.after_tool:
            if not self.open.wait(GATE_DEADLINE):
                return Failure(500, f"stub: the test did not open the gate in {GATE_DEADLINE} s")
        return directives(request)


def saved_state(srv: AnvilServer, name: str) -> str:
    """The session's state as the server's database has it (its last commit)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{srv.state / 'anvilfs.db'}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT state FROM sessions WHERE name = ? AND removed_at IS NULL", (name,)).fetchone()
    except sqlite3.Error:
        return ""
    return row[0] if row else ""


def pane_option(socket: str, window: str, option: str) -> str:
    panes = subprocess.run(["tmux", "-L", socket, "list-panes", "-a", "-F", "#{window_name} #{pane_id}"],
                           capture_output=True, text=True).stdout.splitlines()
    pane = next((line.split()[1] for line in panes if line.split()[0] == window), None)
    if pane is None:
        return ""
    return subprocess.run(["tmux", "-L", socket, "show-options", "-p", "-v", "-t", pane, option],
                          capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("ends", ["with-the-new-server", "while-no-server-runs"])
def test_a_server_killed_mid_turn_is_replaced_by_one_that_adopts_the_pane_and_ends_the_turn(stub, tmp_path, ends):
    """SIGKILL mid-turn. The turn ends after the new server is up (its hook hands the answer to it), or
    before (the hook finds no server: the word stays in the pane, the answer in a tmux buffer)."""
    stub.script = gate = Gate()
    try:
        with claude_in_tmux(stub, tmp_path) as (srv, socket):
            assert turn(srv, "a", "hello") == answer(1, "hello")
            cli(srv, "write", "agent/a/in", "stub:gate please")
            stub.wait_for(lambda r: r.prompt == "stub:gate please", TURN_TIMEOUT, "the gated prompt")
            wait_until(lambda: saved_state(srv, "a") == "running", "the running turn to be on disk")
            pid = cli(srv, "read", "agent/a/pid")
            srv.stop(sig=signal.SIGKILL)
            if ends == "while-no-server-runs":
                gate.open.set()
                wait_until(lambda: pane_option(socket, "a", "@anvilfs-hook") == "await",
                           "the Stop hook to find no server and leave await in the pane")
            second = srv.again(log_name="server2.trace")
            try:
                assert cli(second, "read", "agent/a/pid") == pid  # the same claude, adopted
                gate.open.set()
                assert cli(second, "read", "agent/a/wait", timeout=TURN_TIMEOUT) == "await\n", second.trace_tail()
                assert cli(second, "read", "agent/a/out") == answer(2, "stub:gate please")
                # handed to the new server, or (no server to take it) kept in tmux and found there
                handed = [("out", answer(2, "stub:gate please"))] if ends == "with-the-new-server" else []
                assert hook_writes(second) == handed
                log = cli(second, "read", "agent/a/log")
                assert log.endswith("\n" + answer(2, "stub:gate please")) and "--- answer 2 at " in log, log
                assert turn(second, "a", "after the restart") == answer(3, "after the restart")
            finally:
                second.stop()
                print(second.trace_tail())
    finally:
        gate.open.set()  # a stub thread still held must not outlive the test for long


def test_two_turns_usage_is_what_the_stub_reported_for_each_request_read_from_the_transcript(stub, tmp_path):
    """Claude Code's transcript has each request's usage (a line per content block, the same message id): the
    session's `usage` sums each request once, this turn's lines only; the transcript says no cost."""
    notes = tmp_path / "work" / "notes.txt"

    def script(request: Request):
        if not request.after_tool and request.prompt == "read the notes":  # Read asks no permission in the cwd
            return ToolCall("Read", {"file_path": str(notes)}, text="[stub anthropic] reading the notes")
        return directives(request)

    stub.script = script
    with claude_in_tmux(stub, tmp_path) as (srv, _):
        notes.write_text("the notes\n")
        assert turn(srv, "a", "read the notes").startswith("[stub anthropic] tool done: ")
        first = stub.requests("anthropic")
        assert turn(srv, "a", "and again") == answer(2, "and again")
        spent = dict(line.split(" ", 1) for line in cli(srv, "read", "agent/a/usage").splitlines())
        log = cli(srv, "read", "agent/a/log")
    requests = stub.requests("anthropic")
    assert len(first) == 2 and len(requests) == 3, [r.prompt for r in requests]
    assert "transcript" not in log, log  # no note: each turn's last message was in it by its end, all read
    assert {key: int(spent[key]) for key in USAGE_KEYS} == reported(requests), spent
    assert {key: int(spent["last_" + key]) for key in USAGE_KEYS} == reported(requests[2:]), spent
    assert spent["turns"] == "2" and spent["cost_usd"] == "unknown" and spent["unpriced_turns"] == "2", spent


def test_the_spending_scenario_holds_for_claude_in_tmux(stub, tmp_path):
    """spending.py: the session's, its bead's and its convoy's usage are what the stub reported (from the
    transcript); a token budget spent holds the next prompt, raising it runs it."""
    with claude_in_tmux(stub, tmp_path) as (srv, _):
        check_spending(srv, "a", tmp_path / "work", lambda: reported(stub.requests("anthropic")))
