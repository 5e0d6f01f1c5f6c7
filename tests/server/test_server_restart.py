"""A server stopped mid-turn (killed, or cleanly) comes back and finds its tmux agent.

Real parts: `anvilfs serve` processes, a private tmux server running the
fake agent in interactive mode, whose hook (hooks/anvilfs-status) reports
turns by writing `status` with the `anvilfs` client over 9P. Each answer
waits at a gate file the test opens, so what happens while no server runs
is the test's choice, not the scheduler's.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from harness.fakes import FAKE_AGENT
from harness.prerequisites import require
from harness.server import REPO_ROOT, AnvilServer, start_server
from harness.tmux import end_tmux

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "anvilfs-status"


def config_text(tmp: Path) -> str:
    # The hook needs the `anvilfs` command: this one runs the code under test, however it was installed.
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "anvilfs").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m anvilfs "$@"\n')
    (bin_dir / "anvilfs").chmod(0o755)
    env = {"ANVILFS_HOOK": str(HOOK), "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT),
           "FAKE_AGENT_STATE": str(tmp / "fake-state"), "FAKE_AGENT_GATE": str(tmp / "gate")}
    env_toml = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    quiet_toml = ", ".join(f'{k} = "{v}"' for k, v in env.items() if k != "ANVILFS_HOOK")
    argv = f'argv = ["{sys.executable}", "{FAKE_AGENT}", "--interactive"]'
    return (f'[backends.fake]\nkind = "tmux"\n{argv}\nready_seconds = 0.3\nenv = {{ {env_toml} }}\n'
            f'[backends.quiet]\nkind = "tmux"\n{argv}\nturn_end = "quiet"\nquiet_seconds = 1\n'
            f'ready_seconds = 0.3\nenv = {{ {quiet_toml} }}\n')


def read(srv: AnvilServer, path: str) -> str:
    result = srv.run_cli("read", f"agent/{path}")
    assert result.returncode == 0, result.stderr + srv.trace_tail()
    return result.stdout


def write(srv: AnvilServer, path: str, text: str) -> None:
    result = srv.run_cli("write", f"agent/{path}", input=text)
    assert result.returncode == 0, result.stderr + srv.trace_tail()


def until(check, what: str, timeout: float = 30) -> None:
    """Poll another process's state with a deadline (nothing to wait on across processes)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def pane_text(tmux_socket: str, window: str) -> str:
    """What the agent's pane shows (its window is named after the session)."""
    panes = subprocess.run(["tmux", "-L", tmux_socket, "list-panes", "-a", "-F", "#{window_name} #{pane_id}"],
                           capture_output=True, text=True).stdout.split("\n")
    pane = next((line.split()[1] for line in panes if line.startswith(window + " ")), None)
    if pane is None:
        return ""
    return subprocess.run(["tmux", "-L", tmux_socket, "capture-pane", "-p", "-t", pane],
                          capture_output=True, text=True).stdout


@pytest.fixture
def place():
    require("tmux")
    base = Path(tempfile.mkdtemp(prefix="anvr.", dir="/tmp"))
    tmux_socket = f"anvilfs-test-{uuid.uuid4().hex[:8]}"
    (base / "config.toml").write_text(config_text(base))
    try:
        yield base, ["--config", str(base / "config.toml"), "--tmux-socket", tmux_socket], tmux_socket
    finally:
        end_tmux(tmux_socket)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_server_stopped_mid_turn_then_restarted_finds_the_tmux_agent_and_its_queue(place, how):
    """A crash (SIGKILL) or a clean stop (SIGTERM): either way the tmux agent lives on."""
    base, args, tmux_socket = place
    first = start_server(base, extra_args=args)
    try:
        write(first, "ctl", "new fake /tmp name=t1\n")
        write(first, "t1/in", "fake:hang please\n")
        until(lambda: "hanging until killed" in pane_text(tmux_socket, "t1"), "the agent to take the prompt")
        write(first, "t1/in", "the queued prompt\n")
        assert read(first, "t1/queue").startswith("1 ")
        pid = read(first, "t1/pid").strip()
        assert pid
    finally:
        first.stop(sig=how)
    assert first.returncode == (-signal.SIGKILL if how == signal.SIGKILL else 0)

    second = start_server(base, extra_args=args, log_name="server2.trace")
    try:
        listing = read(second, "list").split()
        assert listing[:3] == ["t1", "fake", "running"], listing
        assert read(second, "t1/pid").strip() == pid  # the same agent, adopted
        assert "the queued prompt" in read(second, "t1/queue")
        write(second, "t1/ctl", "interrupt\n")
        assert read(second, "t1/wait") == "await\n"  # the queued prompt ran after the interrupt
        out = read(second, "t1/out")
        assert "the queued prompt" in out and "[fake agent]" in out, out
        assert read(second, "t1/queue") == ""
        log = read(second, "t1/log")
        assert log.index("fake:hang please") < log.index("the queued prompt")
    finally:
        second.stop()


def stopped_mid_turn(place, how: int) -> None:
    """A server whose sim session s1 hangs in a turn, with a prompt queued behind it, is stopped."""
    base, args, _ = place
    first = start_server(base, extra_args=args)
    try:
        write(first, "ctl", "new sim /tmp name=s1\n")
        write(first, "s1/in", "sim:hang\n")
        write(first, "s1/in", "waiting in the queue\n")
    finally:
        first.stop(sig=how)


def test_a_cleanly_restarted_server_carries_on_a_per_turn_session_and_runs_its_queue(place):
    """SPEC §5: a per-turn session has no process to lose. The turn it was in ends error, not run again."""
    stopped_mid_turn(place, signal.SIGTERM)
    base, args, _ = place
    second = start_server(base, extra_args=args, log_name="server2.trace")
    try:
        assert read(second, "s1/wait") == "await\n"  # no restart written: it ran its queue by itself
        assert "waiting in the queue" in read(second, "s1/out")
        log = read(second, "s1/log")
        assert ": lost: the server stopped during the turn" in log and log.count("\nsim:hang\n") == 1, log
    finally:
        second.stop()


def test_a_server_started_paused_reports_per_turn_sessions_as_exited_and_keeps_the_queue(place):
    stopped_mid_turn(place, signal.SIGKILL)
    base, args, _ = place
    second = start_server(base, extra_args=[*args, "--paused"], log_name="server2.trace")
    try:
        status = read(second, "s1/status")
        assert status.startswith("exited simulated the server restarted"), status
        assert "waiting in the queue" in read(second, "s1/queue")
        write(second, "s1/ctl", "restart\n")
        assert read(second, "s1/wait") == "await\n"
        assert "waiting in the queue" in read(second, "s1/out")
    finally:
        second.stop()


def cut_off_mid_answer(place, backend: str, name: str, prompt: str, how: int, queued: str = "") -> None:
    """A server whose session's agent has begun to answer (and waits at the gate) is stopped; the gate opens."""
    base, args, tmux_socket = place
    first = start_server(base, extra_args=args)
    try:
        write(first, "ctl", f"new {backend} /tmp name={name}\n")
        write(first, f"{name}/in", prompt + "\n")
        until(lambda: "[fake agent] conversation" in pane_text(tmux_socket, name), "the agent to begin its answer")
        if queued:
            write(first, f"{name}/in", queued + "\n")
    finally:
        first.stop(sig=how)
    (base / "gate").touch()  # the rest of the answer comes while no server runs


def test_a_turn_left_running_by_the_old_server_is_followed_to_its_end(place):
    """quiet mode: the answer printed while no server ran is the turn's `out`; then the queue moves on."""
    base, args, tmux_socket = place
    # fake:spin keeps the pane changing, so the old server cannot end the turn by quiet before it stops
    cut_off_mid_answer(place, "quiet", "q1", "fake:spin please", signal.SIGTERM, queued="the next prompt")
    until(lambda: "the first line was: fake:spin please" in pane_text(tmux_socket, "q1"), "the answer to end")
    second = start_server(base, extra_args=args, log_name="server2.trace")
    try:
        assert read(second, "q1/wait") == "await\n"  # the old turn ended, then the queued prompt ran
        assert "the first line was: the next prompt" in read(second, "q1/out")
        assert read(second, "q1/queue") == ""
        log = read(second, "q1/log")
        assert "--- answer 1" in log and "the first line was: fake:spin please" in log, log
    finally:
        second.stop()


def test_a_turn_that_ended_while_no_server_ran_is_found_ended(place):
    """hook mode: the hook found no server; the next one sees what it left in the pane, not `running` for ever."""
    base, args, tmux_socket = place
    cut_off_mid_answer(place, "fake", "h1", "fake:slow please", signal.SIGKILL)
    until(lambda: "cannot" in pane_text(tmux_socket, "h1").split("the first line was: fake:slow please")[-1],
          "the hook to fail for want of a server")
    second = start_server(base, extra_args=args, log_name="server2.trace")
    try:
        assert read(second, "h1/wait") == "await\n"
        assert "the first line was: fake:slow please" in read(second, "h1/out")
    finally:
        second.stop()
