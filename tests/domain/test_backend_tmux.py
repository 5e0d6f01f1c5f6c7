"""The tmux backend with real tmux driving tests/fakes/fake_agent.py --interactive.

Every test runs its own tmux server (-L, a unique socket name) and kills it
in the end, so a person's tmux is never touched. The fake agent's hook
(ANVILFS_HOOK) is a tiny client of a unix socket the test serves: each
word it sends arrives on a trio channel, the test calls agent.hook(word),
and only then is the hook (and so the fake agent) let go, as `anvilfs write`
returns only once the server has taken the status.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from anvilfs.backends.tmux import TmuxAgent, TmuxBackend
from anvilfs.config.model import TmuxBackendConfig
from anvilfs.sessions.backend import AgentExited, AgentFailed, SessionInfo, TurnFailed
from harness.tmux import PaneLooks, private_tmux

pytestmark = pytest.mark.needs("tmux")

FAKE = Path(__file__).parent.parent / "fakes" / "fake_agent.py"
HOOKS = Path(__file__).parents[2] / "hooks"
MARKER = "fake> "
TMUX_SESSION = "anvilfs-test"
HOOK_CLIENT = """\
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\\n")
s.recv(1)
"""


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    with private_tmux() as name:
        yield name


def backend(tmux_socket: str, **settings) -> TmuxBackend:
    config = TmuxBackendConfig(kind="tmux", argv=[sys.executable, str(FAKE), "--interactive"], ready_seconds=0,
                               **settings)
    return TmuxBackend("fake-tmux", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)


def session(tmp_path: Path, name: str = "bot1") -> SessionInfo:
    return SessionInfo(name=name, cwd=str(tmp_path), env={"ANVILFS_SESSION": name})


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True).stdout


async def until(predicate, timeout: float = 10.0) -> None:
    """Poll external state (tmux, processes) until predicate() holds."""
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.05)


def pane_text(socket: str, agent: TmuxAgent) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", agent.saved()["pane"])


async def started(socket: str, agent: TmuxAgent) -> TmuxAgent:
    await agent.start()
    await until(lambda: MARKER.strip() in pane_text(socket, agent))  # the fake is reading its terminal
    return agent


class Recorder:
    """An Output that can be waited on; ``number`` is the session's turn number it stands for."""

    def __init__(self, number: int = 1) -> None:
        self.number = number
        self.chunks: list[str] = []
        self._changed = trio.Event()

    def write(self, text: str) -> None:
        self.chunks.append(text)
        self._changed.set()
        self._changed = trio.Event()

    def note(self, text: str) -> None:
        pass

    def text(self) -> str:
        return "".join(self.chunks)

    async def wait_for(self, text: str) -> None:
        with trio.fail_after(10):
            while text not in self.text():
                await self._changed.wait()


@asynccontextmanager
async def hook_words():
    """(the env that makes the fake agent report its hooks, a channel of (word, let_go) pairs)."""
    directory = tempfile.mkdtemp(prefix="anvt")  # short: unix socket paths are limited
    path = os.path.join(directory, "hook.sock")
    client = os.path.join(directory, "hook.py")
    Path(client).write_text(HOOK_CLIENT)
    send, receive = trio.open_memory_channel(0)

    async def handle(stream) -> None:
        async with stream:
            data = b""
            while not data.endswith(b"\n"):
                data += await stream.receive_some()
            let_go = trio.Event()
            await send.send((data.decode().strip(), let_go))
            await let_go.wait()
            await stream.send_all(b"k")

    sock = trio.socket.socket(trio.socket.AF_UNIX)
    try:
        await sock.bind(path)
        sock.listen()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, handle, [trio.SocketListener(sock)])
            yield {"ANVILFS_HOOK": shlex.join([sys.executable, client, path])}, receive
            nursery.cancel_scope.cancel()
    finally:
        sock.close()
        shutil.rmtree(directory, ignore_errors=True)


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


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"ANVILFS_SESSION": "bot1"}, "write agent/bot1/status await"),
        ({"ANVILFS_SESSION": "bot1", "ANVILFS_ADDRESS": "unix!/tmp/x"}, "-a unix!/tmp/x write bot1/status await"),
    ],
)
def test_the_hook_script_writes_the_status_only_for_an_anvilfs_session(tmp_path, env, expected):
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


async def cut_off(agent: TmuxAgent, socket: str, prompt: str, number: int, gate: Path) -> None:
    """Type a prompt whose answer waits at the gate, then cancel the turn as a stopping server does; open the gate."""
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.turn, prompt, Recorder(number))
            await until(lambda: "this answer comes from" not in pane_text(socket, agent).split(prompt)[-1]
                        and "[fake agent] conversation" in pane_text(socket, agent).split(prompt)[-1])
            scope.cancel()
    gate.touch()  # the rest of the answer comes while no server is there
    await until(lambda: f"the first line was: {prompt}\n" in pane_text(socket, agent)
                and pane_text(socket, agent).rstrip().endswith(MARKER.strip()))  # and the fake reads again


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
