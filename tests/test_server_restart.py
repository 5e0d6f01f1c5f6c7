"""A server stopped mid-turn (killed, or cleanly) comes back and finds its tmux agent.

Real parts: `anvilfs serve` processes, a private tmux server running the
fake agent in interactive mode, whose hook reports turns by writing
`status` with the `anvilfs` client over 9P.
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
from harness.server import AnvilServer, start_server
from harness.tmux import end_tmux

HOOK = Path(__file__).resolve().parent.parent / "hooks" / "anvilfs-status"


def config_text(tmp: Path) -> str:
    env = {"ANVILFS_HOOK": str(HOOK), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "FAKE_AGENT_STATE": str(tmp / "fake-state")}
    env_toml = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    argv = f'argv = ["{sys.executable}", "{FAKE_AGENT}", "--interactive"]'
    return (f'[backends.fake]\nkind = "tmux"\n{argv}\nready_seconds = 0.3\nenv = {{ {env_toml} }}\n'
            f'[backends.quiet]\nkind = "tmux"\n{argv}\nturn_end = "quiet"\nquiet_seconds = 1\n'
            f'ready_seconds = 0.3\nenv = {{ FAKE_AGENT_STATE = "{tmp / "fake-state"}" }}\n')


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


@pytest.fixture
def place():
    require("tmux")
    base = Path(tempfile.mkdtemp(prefix="anvr.", dir="/tmp"))
    tmux_socket = f"anvilfs-test-{uuid.uuid4().hex[:8]}"
    (base / "config.toml").write_text(config_text(base))
    try:
        yield base, ["--config", str(base / "config.toml"), "--tmux-socket", tmux_socket]
    finally:
        end_tmux(tmux_socket)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_server_stopped_mid_turn_then_restarted_finds_the_tmux_agent_and_its_queue(place, how):
    """A crash (SIGKILL) or a clean stop (SIGTERM): either way the tmux agent lives on."""
    base, args = place
    first = start_server(base, extra_args=args)
    try:
        write(first, "ctl", "new fake /tmp name=t1\n")
        write(first, "t1/in", "fake:hang please\n")
        until(lambda: read(first, "t1/status").startswith("running"), "the turn to start")
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


def test_a_restarted_server_reports_command_sessions_as_exited_and_keeps_the_queue(place):
    base, args = place
    first = start_server(base, extra_args=args)
    try:
        write(first, "ctl", "new sim /tmp name=s1\n")
        write(first, "s1/in", "sim:hang\n")
        write(first, "s1/in", "waiting in the queue\n")
    finally:
        first.stop(sig=signal.SIGKILL)
    second = start_server(base, extra_args=args, log_name="server2.trace")
    try:
        status = read(second, "s1/status")
        assert status.startswith("exited simulated the server restarted"), status
        assert "waiting in the queue" in read(second, "s1/queue")
        write(second, "s1/ctl", "restart\n")
        assert read(second, "s1/wait") == "await\n"
        assert "waiting in the queue" in read(second, "s1/out")
    finally:
        second.stop()


def test_a_turn_left_running_by_the_old_server_is_followed_to_its_end(place):
    """quiet mode: the new server watches the pane until it is quiet, then the queue moves on."""
    base, args = place
    first = start_server(base, extra_args=args)
    try:
        write(first, "ctl", "new quiet /tmp name=q1\n")
        write(first, "q1/in", "fake:slow please\n")
        until(lambda: read(first, "q1/status").startswith("running"), "the turn to start")
        write(first, "q1/in", "the next prompt\n")
    finally:
        first.stop(sig=signal.SIGTERM)
    second = start_server(base, extra_args=args, log_name="server2.trace")
    try:
        assert read(second, "q1/wait") == "await\n"  # the old turn ended, then the queued prompt ran
        assert "the next prompt" in read(second, "q1/out")
        assert read(second, "q1/queue") == ""
    finally:
        second.stop()
