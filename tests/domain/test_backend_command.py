"""The per-turn command backend, driven directly against tests/fakes/fake_agent.py.

The fake is a real executable that behaves like `claude -p` (see its
docstring). `trio.fail_after` around turns is a guard against a hang, never
a way to wait for something.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import trio

from anvilfs.backends import command, command_pipes
from anvilfs.backends.command import CommandAgent, CommandBackend
from anvilfs.config.model import CommandBackendConfig
from anvilfs.sessions.backend import AgentExited, AgentFailed, SessionInfo, TurnFailed

FAKES = pathlib.Path(__file__).parent.parent / "fakes"
FAKE = str(FAKES / "fake_agent.py")
GUARD = 20  # seconds a turn may take before the test calls it a hang


class Collector:
    """An Output that keeps what it gets; once `when` shows in the text, it calls `then()`."""

    def __init__(self, agent: CommandAgent | None = None, when: str = "", then=None):
        self.pieces: list[str] = []
        self.notes: list[str] = []
        self.pids: list[int | None] = []  # the agent's pid at each write
        self.agent, self.when, self.then = agent, when, then

    def write(self, text: str) -> None:
        self.pieces.append(text)
        if self.agent is not None:
            self.pids.append(self.agent.pid)
        if self.when and self.when in self.text:
            self.when = ""
            self.then()

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def text(self) -> str:
        return "".join(self.pieces)


def claude_like(tmp_path, **changes) -> CommandBackendConfig:
    fields = {
        "kind": "command",
        "argv": [FAKE, "-p", "--session-id", "{conversation}"],
        "resume_argv": [FAKE, "-p", "--resume", "{conversation}"],
        "env": {"FAKE_AGENT_STATE": str(tmp_path / "state")},
    }
    return CommandBackendConfig(**(fields | changes))


def info(tmp_path, **changes) -> SessionInfo:
    fields = {"name": "s1", "cwd": str(tmp_path), "conversation": "c-1", "env": {"ANVILFS_SESSION": "s1"}}
    return SessionInfo(**(fields | changes))


def make_agent(tmp_path, saved=None, session=None, **changes) -> CommandAgent:
    return CommandBackend("fake", claude_like(tmp_path, **changes)).agent(session or info(tmp_path), saved)


async def run(agent: CommandAgent, prompt: str, out: Collector | None = None) -> Collector:
    out = out or Collector(agent)
    with trio.fail_after(GUARD):
        await agent.turn(prompt, out)
    return out


async def wait_gone(pid: int) -> None:
    """Return when the process `pid` has ended (a pidfd turns readable)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------ answers


async def test_answer_streams_while_the_process_runs(tmp_path):
    # The fake writes its first piece, then waits for the gate file, which the
    # test makes only when that piece has arrived: without streaming, a hang.
    gate = tmp_path / "gate"
    agent = make_agent(tmp_path, session=info(tmp_path, env={"FAKE_AGENT_GATE": str(gate)}))
    seen = {}

    def first_piece():
        seen["text"], seen["pid"] = out.text, agent.pid
        os.kill(agent.pid, 0)  # the process is alive (it waits for the gate)
        gate.touch()

    out = Collector(agent, when="turn 1: ", then=first_piece)
    await run(agent, "hello fake:slow", out)
    assert seen["pid"] is not None
    assert "You wrote" not in seen["text"]
    assert len(out.pieces) >= 2
    assert "conversation c-1 turn 1: this answer comes from tests/fakes/fake_agent.py" in out.text
    assert "the first line was: hello fake:slow" in out.text
    assert agent.pid is None


async def test_second_turn_resumes_the_conversation(tmp_path):
    agent = make_agent(tmp_path)
    assert "conversation c-1 turn 1:" in (await run(agent, "one")).text
    # the fake, like claude, refuses --session-id for a known id: only resume_argv works here
    assert "conversation c-1 turn 2:" in (await run(agent, "two")).text


async def test_saved_turns_let_a_new_agent_resume(tmp_path):
    backend = CommandBackend("fake", claude_like(tmp_path))
    first = backend.agent(info(tmp_path))
    await run(first, "one")
    assert first.saved()["turns"] == 1
    again = backend.agent(info(tmp_path), first.saved())
    assert "conversation c-1 turn 2:" in (await run(again, "two")).text


async def test_clear_starts_a_new_conversation(tmp_path):
    agent = make_agent(tmp_path)
    await run(agent, "one")
    agent.clear()
    text = (await run(agent, "fresh")).text
    assert "turn 1:" in text and "conversation c-1" not in text
    assert f"conversation {agent.saved()['conversation']} turn 1:" in text
    assert f"conversation {agent.saved()['conversation']} turn 2:" in (await run(agent, "more")).text


async def test_without_resume_argv_every_turn_runs_argv(tmp_path):
    agent = make_agent(tmp_path, argv=[FAKE, "-p"], resume_argv=None)
    for prompt in ("one", "two"):
        assert "conversation - turn 1:" in (await run(agent, prompt)).text


async def test_prompt_as_one_argument_never_reaches_a_shell(tmp_path):
    agent = make_agent(tmp_path, argv=[FAKE, "--prompt", "{prompt}"], resume_argv=None, prompt="argument")
    prompt = "$(touch pwned) `touch pwned2`; echo {model} > pwned3 | cat"
    out = await run(agent, prompt)
    assert f"the first line was: {prompt}\n" in out.text
    assert not list(tmp_path.glob("pwned*"))


async def test_env_and_cwd_reach_the_process(tmp_path):
    work = tmp_path / "work dir"
    work.mkdir()
    state = tmp_path / "state"
    env = {"FAKE_AGENT_STATE": str(state), "ANVILFS_SESSION": "from-config"}
    agent = make_agent(tmp_path, env=env, session=info(tmp_path, cwd=str(work)))
    text = (await run(agent, "fake:env")).text
    assert "ANVILFS_SESSION=s1\n" in text  # the session's env wins over the backend's
    assert f"FAKE_AGENT_STATE={state}\n" in text
    assert f"cwd={work}\n" in text


async def test_model_placeholder(tmp_path):
    argv = [FAKE, "--model", "{model}"]
    agent = make_agent(tmp_path, argv=argv, resume_argv=None)
    with pytest.raises(TurnFailed, match=r"\{model\}.*model=NAME"):
        await run(agent, "hi")
    agent = make_agent(tmp_path, argv=argv, resume_argv=None, session=info(tmp_path, model="m1"))
    assert "[fake agent] model m1\n" in (await run(agent, "hi")).text


async def test_multibyte_characters_split_across_reads(tmp_path):
    text = (await run(make_agent(tmp_path), "fake:utf8")).text
    assert "x" + "é" * 5000 + "\n" in text
    assert "\ufffd" not in text


class Chunks(trio.abc.ReceiveStream):
    """A stream that hands out the given chunks one per read."""

    def __init__(self, chunks: list[bytes]):
        self.chunks = chunks

    async def receive_some(self, max_bytes=None) -> bytes:
        await trio.lowlevel.checkpoint()
        return self.chunks.pop(0) if self.chunks else b""

    async def aclose(self) -> None:
        pass


async def test_pump_never_splits_a_character():
    data = "aé€😀".encode()
    pieces: list[str] = []
    await command_pipes.pump(Chunks([data[i : i + 1] for i in range(len(data))]), pieces.append)
    assert "".join(pieces) == "aé€😀"
    pieces.clear()
    await command_pipes.pump(Chunks([b"ok\xff", b"\xe2\x82"]), pieces.append)  # bad byte, then cut off at the end
    assert "".join(pieces) == "ok\ufffd\ufffd"


# ------------------------------------------------------------ failures


async def test_nonzero_exit_fails_the_turn_with_the_stderr_line(tmp_path):
    out = Collector()
    with pytest.raises(TurnFailed, match=r"^exit status 3: \[fake agent\] failing because the prompt said fake:fail$"):
        await run(make_agent(tmp_path), "fake:fail", out)
    assert "failing because the prompt said fake:fail" in "".join(out.notes)
    assert out.text == ""


async def test_the_last_nonempty_stderr_line_is_named(tmp_path):
    script = "import sys; sys.stderr.write('first\\nthe reason\\n\\n  \\n'); sys.exit(5)"
    agent = make_agent(tmp_path, argv=[sys.executable, "-c", script], resume_argv=None)
    with pytest.raises(TurnFailed, match=r"^exit status 5: the reason$"):
        await run(agent, "hi")


async def test_without_stderr_the_last_stdout_line_is_named(tmp_path):
    # Claude Code prints "API Error: 500 ..." on stdout and nothing on stderr
    script = "import sys; print('partial answer'); print('API Error: 500 overloaded'); print(); sys.exit(1)"
    agent = make_agent(tmp_path, argv=[sys.executable, "-c", script], resume_argv=None)
    out = Collector(agent)
    with pytest.raises(TurnFailed, match=r"^exit status 1: API Error: 500 overloaded$"):
        await run(agent, "hi", out)
    assert "API Error: 500 overloaded" in out.text


async def test_exit_0_with_output_matching_error_pattern_fails_the_turn(tmp_path):
    # aider prints a failed model call (wrapped at 80 columns) and exits 0
    agent = make_agent(tmp_path, argv=[sys.executable, "-c", "import sys; print(sys.argv[1])", "{prompt}"],
                       prompt="argument", resume_argv=None, error_pattern=r"(?m)^(oops: .*(?:\n.+)*)\s*\Z")
    out = Collector(agent)
    with pytest.raises(TurnFailed, match=r"^oops: the model is \(slow\)$"):
        await run(agent, "a partial answer\noops: the model is \n(slow)\n", out)
    assert "oops: the model" in out.text
    out = await run(agent, "oops: a quoted error\n\nthen the answer")  # the error does not end the output
    assert out.text.startswith("oops: a quoted error")


async def test_reason_pattern_names_the_failure_where_the_last_line_does_not(tmp_path):
    # Gemini CLI: the API's text, a stack trace, then "An unexpected critical error occurred:[object Object]"
    script = ("import sys; sys.stderr.write('Error talking: ApiError: HTTP 429 quota\\n    at retry (x.js:1)\\n'"
              "'An unexpected critical error occurred:[object Object]\\n'); sys.exit(1)")
    argv = [sys.executable, "-c", script]
    agent = make_agent(tmp_path, argv=argv, resume_argv=None, reason_pattern=r"Error talking: (\w*Error: .+)")
    with pytest.raises(TurnFailed, match=r"^exit status 1: ApiError: HTTP 429 quota$"):
        await run(agent, "hi")
    agent = make_agent(tmp_path, argv=argv, resume_argv=None, reason_pattern=r"no such text")
    with pytest.raises(TurnFailed, match=r"occurred:\[object Object\]$"):  # no match: the last line
        await run(agent, "hi")


async def test_death_by_a_signal_is_agent_exited(tmp_path):
    with pytest.raises(AgentExited, match=r"^killed by signal SIGKILL$"):
        await run(make_agent(tmp_path), "fake:crash")


async def test_timeout_fails_the_turn_and_kills_the_process(tmp_path):
    # 3 s, not less: the fake (a Python process) must have started and said it hangs by then, even on a busy machine
    agent = make_agent(tmp_path, timeout=3)
    out = Collector(agent)
    with pytest.raises(TurnFailed, match=r"^timed out after 3 s$"):
        await run(agent, "fake:hang", out)
    assert "hanging until killed" in out.text
    with pytest.raises(ProcessLookupError):
        os.kill(out.pids[0], 0)
    assert agent.pid is None


async def test_a_program_that_does_not_read_stdin(tmp_path):
    agent = make_agent(tmp_path, argv=["true"], resume_argv=None)
    assert (await run(agent, "x" * (1 << 20))).text == ""


async def test_a_leftover_child_holding_stdout_does_not_hold_the_turn(tmp_path, monkeypatch):
    monkeypatch.setattr(command, "DRAIN_GRACE", 0.1)
    script = "import subprocess; subprocess.Popen(['sleep', '60']); print('parent done', flush=True)"
    agent = make_agent(tmp_path, argv=[sys.executable, "-c", script], resume_argv=None)
    out = Collector(agent)
    try:
        assert (await run(agent, "hi", out)).text == "parent done\n"
    finally:
        os.killpg(out.pids[0], 9)  # the sleep is still in the turn's process group


# ------------------------------------------------------------ stopping


async def test_cancel_kills_the_process_group_and_goes_on(tmp_path):
    agent = make_agent(tmp_path)
    with trio.CancelScope() as scope:
        out = Collector(agent, when="hanging", then=scope.cancel)
        await run(agent, "fake:family", out)
    assert scope.cancelled_caught
    pid, child = out.pids[0], int(out.text.split("child ")[1].split()[0])
    try:
        with pytest.raises(ProcessLookupError):  # killed and reaped
            os.kill(pid, 0)
        with trio.fail_after(GUARD):
            await wait_gone(child)  # a child in the group died too
    finally:
        try:
            os.kill(child, 9)
        except ProcessLookupError:
            pass
    assert agent.pid is None


async def test_kill_during_a_turn_fails_it(tmp_path):
    agent = make_agent(tmp_path)
    async with trio.open_nursery() as nursery:
        out = Collector(agent, when="hanging", then=lambda: nursery.start_soon(agent.kill))
        with pytest.raises(TurnFailed, match="SIGKILL: the session was stopped"):
            await run(agent, "fake:hang", out)
    with pytest.raises(ProcessLookupError):
        os.kill(out.pids[0], 0)


# ------------------------------------------------------------ availability


async def test_availability_and_start(tmp_path):
    missing = CommandBackend("x", claude_like(tmp_path, argv=["anvilfs-no-such-program"], resume_argv=None))
    assert missing.availability() == "missing: anvilfs-no-such-program not found on PATH"
    with pytest.raises(AgentFailed, match="anvilfs-no-such-program not found on PATH"):
        await missing.agent(info(tmp_path)).start()
    ready = CommandBackend("fake", claude_like(tmp_path, description="the fake"))
    assert (ready.kind, ready.description, ready.availability()) == ("command", "the fake", "ready")
    await ready.agent(info(tmp_path)).start()


async def test_path_from_the_backend_env_finds_the_program(tmp_path):
    env = {"PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", "FAKE_AGENT_STATE": str(tmp_path)}
    backend = CommandBackend("fake", claude_like(tmp_path, argv=["fake_agent.py"], resume_argv=None, env=env))
    assert backend.availability() == "ready"
    assert "[fake agent]" in (await run(backend.agent(info(tmp_path)), "hi")).text
