"""The tmux backend with real tmux driving tests/fakes/fake_agent.py --interactive: windows, turns, adoption.

The hooks' part (words, answers, the hook script) is in test_tmux_hooks.py;
the common parts are in tests/harness/tmux_agents.py.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from anvilfs.backends.tmux import TmuxBackend
from anvilfs.config.model import TmuxBackendConfig
from anvilfs.sessions.backend import AgentExited, AgentFailed, SessionInfo, TurnFailed
from harness.tmux import private_tmux
from harness.tmux_agents import (FAKE, MARKER, TMUX_SESSION, Recorder, backend, cut_off, pane_text, session,
                                 started, tmux, until)

pytestmark = pytest.mark.needs("tmux")


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    with private_tmux() as name:  # a tmux server of the test's own, killed after it
        yield name


def test_the_fake_agent_is_there():
    assert FAKE.exists(), "tests/fakes/fake_agent.py is missing"


def test_availability_names_what_is_missing(tmux_socket):
    assert backend(tmux_socket).availability() == "ready"
    config = TmuxBackendConfig(kind="tmux", argv=["no-such-agent-xyz"])
    missing = TmuxBackend("x", config, tmux_session=TMUX_SESSION).availability()
    assert missing == "missing: no-such-agent-xyz not found on PATH"


async def test_start_opens_a_named_window_with_the_environment(tmux_socket, tmp_path):
    fake = backend(tmux_socket, env={"ANVIL_TEST_VAR": "from config", "ANVILFS_SESSION": "overridden"})
    one = await started(tmux_socket, fake.agent(session(tmp_path, "bot1")))
    two = await started(tmux_socket, fake.agent(session(tmp_path, "bot2")))
    windows = tmux(tmux_socket, "list-windows", "-t", TMUX_SESSION, "-F", "#{window_name} #{pane_id} #{pane_pid}")
    assert f"bot1 {one.saved()['pane']} {one.pid}" in windows.splitlines()
    assert f"bot2 {two.saved()['pane']} {two.pid}" in windows.splitlines()
    environ = Path(f"/proc/{one.pid}/environ").read_bytes().split(b"\0")
    assert b"ANVILFS_SESSION=bot1" in environ  # the session's env wins over the backend's
    assert b"ANVIL_TEST_VAR=from config" in environ
    assert os.readlink(f"/proc/{one.pid}/cwd") == str(tmp_path)
    assert one.saved() == {"pane": one.saved()["pane"], "window": one.saved()["window"], "pid": one.pid}


async def test_a_lone_program_word_is_not_given_to_a_shell(tmux_socket, tmp_path):
    odd = tmp_path / "dir with space $(x)"
    odd.mkdir()
    program = odd / "agent"
    program.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} --interactive\n")
    program.chmod(0o755)
    config = TmuxBackendConfig(kind="tmux", argv=[str(program)], ready_seconds=0)
    lone = TmuxBackend("lone", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)
    await started(tmux_socket, lone.agent(session(tmp_path)))


async def test_argv_placeholders_are_filled_from_the_session(tmux_socket, tmp_path):
    argv = [sys.executable, str(FAKE), "--interactive", "--session-id", "{conversation}"]
    config = TmuxBackendConfig(kind="tmux", argv=argv, turn_end="quiet", quiet_seconds=0.5, ready_seconds=0)
    fake = TmuxBackend("conv", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)
    info = SessionInfo(name="bot1", cwd=str(tmp_path), conversation="c-123")
    agent = await started(tmux_socket, fake.agent(info))
    output = Recorder()
    await agent.turn("hello", output)
    assert "[fake agent] conversation c-123 turn 1:" in output.text()


async def test_start_fails_for_a_missing_cwd_or_a_program_that_ends(tmux_socket, tmp_path):
    with pytest.raises(AgentFailed, match="not a directory"):
        await backend(tmux_socket).agent(session(tmp_path / "nowhere")).start()
    config = TmuxBackendConfig(kind="tmux", argv=[sys.executable, "--model", "{model}"])
    needs_model = TmuxBackend("m", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)
    with pytest.raises(AgentFailed, match="argv needs {model}"):
        await needs_model.agent(session(tmp_path)).start()
    config = TmuxBackendConfig(kind="tmux", argv=[sys.executable, "-c", "pass"], ready_seconds=1)
    quitter = TmuxBackend("quitter", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)
    with pytest.raises(AgentFailed, match="ended within ready_seconds"):
        await quitter.agent(session(tmp_path)).start()


async def test_a_quiet_turn_ends_when_the_pane_is_quiet_with_only_that_turns_text(tmux_socket, tmp_path):
    # pieces 0.2 s apart must not look quiet: 2 s leaves room for a loaded machine (no timing is asserted)
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=2.0)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    assert agent.hook("await") is False  # a quiet backend takes no hook reports
    first = Recorder()
    await agent.turn("fake:slow first prompt", first)
    assert "turn 1" in first.text() and "the first line was: fake:slow first prompt" in first.text()
    second = Recorder()
    await agent.turn("second prompt\n", second)
    assert "turn 2: this answer" in second.text() and "the first line was: second prompt" in second.text()
    assert "first prompt" not in second.text() and "turn 1" not in second.text()


async def test_a_multi_line_prompt_arrives_literally(tmux_socket, tmp_path):
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    canary = tmp_path / "shell-ran"
    lines = [f"say \"hi\" 'there' $(touch {canary}) `touch {canary}` \\n ; # {{x}} é",
             f"second line; touch {canary} && echo $HOME %s"]
    output = Recorder()
    await agent.turn("\n".join(lines) + "\n", output)
    for line in lines:  # the fake answers each line it reads from its terminal
        assert f"the first line was: {line}\n" in output.text()
    assert not canary.exists()


async def test_a_cancelled_turn_leaves_the_agent_alone_and_interrupt_types_ctrl_c(tmux_socket, tmp_path):
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=60)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.turn, "fake:hang", Recorder())
            await until(lambda: "hanging until killed" in pane_text(tmux_socket, agent))
            scope.cancel()  # as on server shutdown: the agent must outlive it
    assert await agent.backend.adopt(session(tmp_path), agent.saved()) is not None
    await agent.interrupt()
    await until(lambda: "[fake agent] interrupted" in pane_text(tmux_socket, agent))  # Ctrl-C reached it
    # Had the cancel typed a Ctrl-C too, this second one would have hit the fake at its prompt and
    # ended it (KeyboardInterrupt): a line typed now is answered only if the cancel typed nothing.
    tmux(tmux_socket, "send-keys", "-t", agent.saved()["pane"], "still there", "Enter")
    await until(lambda: "the first line was: still there" in pane_text(tmux_socket, agent))
    text = pane_text(tmux_socket, agent)
    assert "KeyboardInterrupt" not in text and text.count("[fake agent] interrupted") == 1, text
    assert await agent.backend.adopt(session(tmp_path), agent.saved()) is not None  # and it lives on


async def test_a_window_killed_from_outside_ends_the_agent(tmux_socket, tmp_path):
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    tmux(tmux_socket, "kill-window", "-t", agent.saved()["window"])
    with trio.fail_after(10):
        reason = await agent.wait_exit()
    assert reason == f"its tmux pane {agent.saved()['pane']} is gone"
    with pytest.raises(AgentExited, match="is gone"):
        await agent.turn("hello", Recorder())


async def test_an_agent_dying_during_a_turn_raises_agent_exited(tmux_socket, tmp_path):
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=60)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    with trio.fail_after(10), pytest.raises(AgentExited, match="is gone"):
        await agent.turn("fake:crash", Recorder())


async def test_adopt_finds_a_live_pane_and_not_a_dead_one(tmux_socket, tmp_path):
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)
    old = await started(tmux_socket, fake.agent(session(tmp_path)))
    saved = old.saved()
    later = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)  # as a restarted server makes it
    assert await later.adopt(session(tmp_path), {**saved, "pid": saved["pid"] + 1}) is None
    adopted = await later.adopt(session(tmp_path), saved)
    assert adopted is not None and adopted.pid == old.pid and adopted.saved() == saved
    output = Recorder()
    await adopted.turn("after the restart", output)
    assert "the first line was: after the restart" in output.text()
    await adopted.kill()
    assert await later.adopt(session(tmp_path), saved) is None


async def test_kill_and_stop_remove_the_window(tmux_socket, tmp_path):
    fake = backend(tmux_socket)
    killed = await started(tmux_socket, fake.agent(session(tmp_path, "killed")))
    stopped = await started(tmux_socket, fake.agent(session(tmp_path, "stopped")))
    await killed.kill()
    await stopped.stop()
    names = tmux(tmux_socket, "list-windows", "-a", "-F", "#{window_name}").split()
    assert "killed" not in names and "stopped" not in names
    with trio.fail_after(10):
        assert "is gone" in await killed.wait_exit()
        assert "is gone" in await stopped.wait_exit()


async def test_a_turn_cut_off_by_a_stopping_server_is_followed_whole_by_the_next(tmux_socket, tmp_path):
    gate = tmp_path / "gate"
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5, env={"FAKE_AGENT_GATE": str(gate)})
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    await agent.turn("warm up", Recorder(1))
    await cut_off(agent, tmux_socket, "fake:slow cut off", 2, gate)
    later = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)  # as the restarted server makes it
    adopted = await later.adopt(session(tmp_path), agent.saved())
    output = Recorder(2)
    with trio.fail_after(10):
        await adopted.follow(output)
    assert output.text().startswith(f"{MARKER}fake:slow cut off\n[fake agent] conversation - turn 2: "), output.text()
    assert "the first line was: fake:slow cut off\n" in output.text() and "warm up" not in output.text()
    with pytest.raises(TurnFailed, match="did not run"):  # turn 3 began, but the server stopped before typing it
        await adopted.follow(Recorder(3))


async def test_output_is_found_after_tmux_trims_a_full_history(tmux_socket, tmp_path):
    tmux(tmux_socket, "new-session", "-d", "-s", "keep", "--", "sleep", "600")  # holds the server for the option
    tmux(tmux_socket, "set-option", "-g", "history-limit", "100")  # full at once; dropped 10 rows at a time
    fake = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)
    agent = await started(tmux_socket, fake.agent(session(tmp_path)))
    await agent.turn("\n".join(f"filler {n}" for n in range(40)), Recorder())
    output = Recorder()
    await agent.turn("\n".join(f"burst {n}" for n in range(15)), output)  # ~60 rows at once: several trims
    assert "turn 40:" not in output.text()
    for n in range(15):
        assert f"the first line was: burst {n}\n" in output.text()


async def test_a_restarted_program_resumes_its_conversation_once_it_had_a_prompt(tmux_socket, tmp_path):
    state = tmp_path / "fake-state"
    argv = [sys.executable, str(FAKE), "--interactive", "--session-id", "{conversation}"]
    config = TmuxBackendConfig(kind="tmux", argv=argv, resume_argv=[*argv[:-2], "--resume", "{conversation}"],
                               turn_end="quiet", quiet_seconds=0.5, ready_seconds=0, env={"FAKE_AGENT_STATE": str(state)})
    resuming = TmuxBackend("resuming", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)
    info = SessionInfo(name="bot1", cwd=str(tmp_path), conversation="c-9")
    first = await started(tmux_socket, resuming.agent(info))
    assert "begun" not in first.saved()
    await first.turn("hello", Recorder())
    assert first.saved()["begun"] is True
    await first.kill()
    again = await started(tmux_socket, resuming.agent(info, first.saved()))  # as a restart makes it
    command = Path(f"/proc/{again.pid}/cmdline").read_bytes().split(b"\0")
    assert b"--resume" in command and b"c-9" in command
    # a restored agent whose pane is gone (its tmux server lost) keeps that the conversation began
    assert resuming.agent(info, first.saved()).saved() == {"begun": True}


async def test_a_start_while_the_tmux_server_exits_opens_its_window_on_a_new_one(tmux_socket, tmp_path, monkeypatch):
    """Killing a session's last window ends the tmux server a moment after the kill returns (exit-empty): a
    start (a restart's) whose new-session connects in that moment gets "server exited unexpectedly" and its
    new-window "no server running" (seen under load). A tmux on PATH answers the first new-session as that dying
    server does; the start must try again on a new server, not fail."""
    real, wrapper, answered = shutil.which("tmux"), tmp_path / "bin" / "tmux", tmp_path / "dying-answered"
    wrapper.parent.mkdir()
    wrapper.write_text(f"""#!/bin/sh
case " $* " in *" new-session "*)
  if [ ! -e {shlex.quote(str(answered))} ]; then : > {shlex.quote(str(answered))}; echo 'server exited unexpectedly' >&2; exit 1; fi;;
esac
exec {shlex.quote(real)} "$@"
""")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    agent = await started(tmux_socket, backend(tmux_socket).agent(session(tmp_path)))
    assert answered.exists(), "the dying server's answer was never given: the test shows nothing"
    windows = tmux(tmux_socket, "list-windows", "-t", TMUX_SESSION, "-F", "#{pane_id}")
    assert windows.split() == [agent.saved()["pane"]]
