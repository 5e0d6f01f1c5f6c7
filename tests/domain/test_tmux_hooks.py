"""The tmux backend's hooks, with real tmux and tests/fakes/fake_agent.py --interactive.

The hook's words end the turns (turn_end = "hook"); a hook that found no
server leaves its word in the pane and its answer in a tmux buffer for the
next server; hooks/anvilfs-status runs `anvilfs hook`, and keeps the word in
the pane only when no server answered. An Enter pressed again (until the
hook says running) is test_backend_tmux_enter.py's.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from anvilfs.backends.tmux import TmuxAgent
from harness.tmux import PaneLooks, private_tmux
from harness.tmux_agents import HOOKS, MARKER, Recorder, backend, cut_off, hook_words, pane_text, session, started, tmux, until

pytestmark = pytest.mark.needs("tmux")


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    with private_tmux() as name:  # a tmux server of the test's own, killed after it
        yield name


def stop_hook(tmp_path: Path, answer: str) -> str:
    """An ANVILFS_HOOK that gives hooks/anvilfs-status the JSON input Claude Code's Stop hook gets."""
    (tmp_path / "stop.json").write_text(json.dumps({"hook_event_name": "Stop", "last_assistant_message": answer}))
    return f"/bin/sh -c 'exec {HOOKS}/anvilfs-status \"$1\" < {tmp_path}/stop.json' hook"


def kept_answer(socket: str, agent: TmuxAgent) -> str | None:
    result = subprocess.run(["tmux", "-L", socket, "show-buffer", "-b", f"anvilfs-answer-{agent.saved()['pane']}"],
                            capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


async def test_a_hook_turn_streams_and_ends_only_when_the_hook_says_await(tmux_socket, tmp_path):
    gate = tmp_path / "gate"
    async with hook_words() as (env, words):
        fake = backend(tmux_socket, turn_end="hook", quiet_seconds=0.05, env={**env, "FAKE_AGENT_GATE": str(gate)})
        agent = await started(tmux_socket, fake.agent(session(tmp_path)))
        looks = PaneLooks(fake.tmux)
        output, done = Recorder(), trio.Event()

        async def turn() -> None:
            await agent.turn("fake:slow hello", output)
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn)
            word, let_go = await words.receive()
            assert (word, agent.hook(word)) == ("running", True)
            let_go.set()
            await output.wait_for(f"{MARKER}fake:slow hello\n")  # streamed while the agent still works
            assert not done.is_set()
            gate.touch()
            word, let_go = await words.receive()
            assert word == "await"  # the answer is all on screen now
            await looks.wait_more(3)  # a quiet pane, POLL apart: quiet_seconds would have ended the turn
            assert not done.is_set()
            assert agent.hook("await") is True
            let_go.set()
            with trio.fail_after(10):
                await done.wait()
    assert "[fake agent] conversation - turn 1: this answer comes from tests/fakes/fake_agent.py" in output.text()
    assert "the first line was: fake:slow hello" in output.text()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"ANVILFS_SESSION": "bot1"}, "hook await"),
        ({"ANVILFS_SESSION": "bot1", "ANVILFS_ADDRESS": "unix!/tmp/x"}, "-a unix!/tmp/x hook await"),
    ],
)
def test_the_hook_script_runs_anvilfs_hook_only_for_an_anvilfs_session(tmp_path, env, expected):
    record = tmp_path / "argv"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "anvilfs").write_text(f'#!/bin/sh\necho "$*" > {shlex.quote(str(record))}\n')
    (bin_dir / "anvilfs").chmod(0o755)
    clean = {"PATH": f"{bin_dir}:/usr/bin:/bin", **env}
    result = subprocess.run([str(HOOKS / "anvilfs-status"), "await"], env=clean, capture_output=True)
    assert result.returncode == 0
    assert (record.read_text().strip() if record.exists() else None) == expected


def test_the_hook_script_says_when_anvilfs_is_not_on_path(tmp_path):
    clean = {"PATH": str(tmp_path), "ANVILFS_SESSION": "bot1"}  # sh finds its builtins; no anvilfs there
    result = subprocess.run(["/bin/sh", str(HOOKS / "anvilfs-status"), "await"], env=clean, capture_output=True, text=True)
    assert result.returncode == 1
    assert f"the anvilfs command is not on PATH ({tmp_path})" in result.stderr


async def test_a_turn_whose_hook_found_no_server_is_ended_by_what_the_hook_left_in_the_pane(tmux_socket, tmp_path):
    gate = tmp_path / "gate"
    env = {"ANVILFS_HOOK": str(HOOKS / "anvilfs-status"), "FAKE_AGENT_GATE": str(gate),
           "ANVILFS_ADDRESS": f"unix!{tmp_path}/no-server-here", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    fake = backend(tmux_socket, turn_end="hook", env=env)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    await cut_off(agent, tmux_socket, "fake:slow hooked", 1, gate)
    await until(lambda: tmux(tmux_socket, "show-options", "-p", "-v", "-t", agent.saved()["pane"],
                             "@anvilfs-hook").strip() == "await")  # the hook ran, found no server, said so here
    adopted = await backend(tmux_socket, turn_end="hook").adopt(session(tmp_path), agent.saved())
    output = Recorder(1)
    with trio.fail_after(10):
        await adopted.follow(output)  # no hook word will ever come to this server
    assert "the first line was: fake:slow hooked\n" in output.text()


async def test_an_await_the_old_server_took_is_in_saved_and_ends_the_followed_turn(tmux_socket, tmp_path):
    """The old server answered the hook's await and was killed before it ended the turn: the next follows no more."""
    gate = tmp_path / "gate"
    fake = backend(tmux_socket, turn_end="hook", env={"FAKE_AGENT_GATE": str(gate)})  # no hook script: no word in the pane
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    await cut_off(agent, tmux_socket, "fake:slow hooked", 1, gate)
    saved = agent.saved() | {"hook_await": 1}  # what the killed server had saved before answering the hook
    adopted = await backend(tmux_socket, turn_end="hook").adopt(session(tmp_path), saved)
    output = Recorder(1)
    with trio.fail_after(10):
        await adopted.follow(output)
    assert "the first line was: fake:slow hooked\n" in output.text()
    assert adopted.saved()["hook_await"] == 1


async def test_the_hooks_await_is_kept_in_saved(tmux_socket, tmp_path):
    fake = backend(tmux_socket, turn_end="hook")
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    with trio.fail_after(20):  # the turn ends at the hook's await, or the test fails (it hung here)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.turn, "hello", Recorder(1))
            # the answer may be in the pane before the turn's typing commands return: the await must
            # be taken all the same (it hung here when the turn was armed only after typing)
            await until(lambda: "the first line was: hello" in pane_text(tmux_socket, agent))
            assert "hook_await" not in agent.saved()
            assert agent.hook("await")
    assert agent.saved()["hook_await"] == 1


async def test_a_turn_whose_hook_found_no_server_has_the_answer_the_hook_kept(tmux_socket, tmp_path):
    gate = tmp_path / "gate"
    env = {"ANVILFS_HOOK": stop_hook(tmp_path, "the answer, whole"), "FAKE_AGENT_GATE": str(gate),
           "ANVILFS_ADDRESS": f"unix!{tmp_path}/no-server-here", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    fake = backend(tmux_socket, turn_end="hook", env=env)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    await cut_off(agent, tmux_socket, "fake:slow hooked", 1, gate)
    await until(lambda: tmux(tmux_socket, "show-options", "-p", "-v", "-t", agent.saved()["pane"],
                             "@anvilfs-hook").strip() == "await")
    assert kept_answer(tmux_socket, agent) == "the answer, whole\n"  # `anvilfs hook` kept it before it connected
    adopted = await backend(tmux_socket, turn_end="hook").adopt(session(tmp_path), agent.saved())
    output = Recorder(1)
    with trio.fail_after(10):
        await adopted.follow(output)
    assert output.given == "the answer, whole\n"  # the turn's answer: not the pane's text
    assert "the first line was: fake:slow hooked\n" in output.text()  # which streamed all the same
    with trio.CancelScope() as scope:  # the next turn forgets the kept answer before it types
        async with trio.open_nursery() as nursery:
            nursery.start_soon(adopted.turn, "fake:hang", Recorder(2))
            await until(lambda: "hanging until killed" in pane_text(tmux_socket, agent))
            scope.cancel()
    assert kept_answer(tmux_socket, agent) is None


@pytest.mark.parametrize(("status", "kept"), [(0, False), (1, True), (3, False)])
def test_the_hook_script_keeps_the_word_in_the_pane_only_when_no_server_answered(tmp_path, status, kept):
    """anvilfs hook exits 0 (taken), 1 (no server) or 3 (refused); the hook's input reaches it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "anvilfs").write_text(f'#!/bin/sh\ncat > {tmp_path}/input\nexit {status}\n')
    (bin_dir / "tmux").write_text(f'#!/bin/sh\necho "$*" > {tmp_path}/tmux\n')
    for program in ("anvilfs", "tmux"):
        (bin_dir / program).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ANVILFS_SESSION": "bot1", "TMUX_PANE": "%3"}
    result = subprocess.run([str(HOOKS / "anvilfs-status"), "await"], env=env, input=b'{"last_assistant_message": "x"}')
    assert result.returncode == (0 if status == 0 else 1)
    assert (tmp_path / "input").read_bytes() == b'{"last_assistant_message": "x"}'
    recorded = (tmp_path / "tmux").read_text().split() if (tmp_path / "tmux").exists() else None
    assert recorded == (["set-option", "-p", "-t", "%3", "@anvilfs-hook", "await"] if kept else None)
