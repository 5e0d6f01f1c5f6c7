"""A tmux agent's `pid` (SPEC: the agent's process, while there is one), with real tmux and the fake agent.

The pid shown is the pane's program while it runs, and nothing once it was
stopped, killed or ended by itself; the pane's own pid, which tells the
agent's pane from another that got its id, is kept apart from it (saved,
compared on adoption, and by kill on a dead pane that remains).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from anvilfs.backends.tmux import TmuxAgent
from harness.tmux import private_tmux
from harness.tmux_agents import backend, session, started, tmux

pytestmark = pytest.mark.needs("tmux")

EXIT_DEADLINE = 10  # seconds for wait_exit to see a program that ended


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    with private_tmux() as name:
        yield name


async def running_agent(tmux_socket: str, tmp_path: Path, name: str = "bot1") -> TmuxAgent:
    """A started fake agent whose pid is shown: the pane's program, alive."""
    agent = await started(tmux_socket, backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)
                          .agent(session(tmp_path, name)))
    assert agent.pid == pane_pid(tmux_socket, agent)
    assert_is_the_fake(agent.pid)
    return agent


def pane_pid(tmux_socket: str, agent: TmuxAgent) -> int:
    return int(tmux(tmux_socket, "display-message", "-p", "-t", agent.saved()["pane"], "#{pane_pid}"))


def assert_is_the_fake(pid: int | None) -> None:
    assert pid is not None, "no pid shown for a running agent"
    assert b"fake_agent.py" in Path(f"/proc/{pid}/cmdline").read_bytes(), f"pid {pid} is not the fake agent"


async def ended(agent: TmuxAgent) -> str:
    with trio.fail_after(EXIT_DEADLINE):
        return await agent.wait_exit()


async def test_stop_and_kill_leave_no_pid(tmux_socket, tmp_path):
    stopped = await running_agent(tmux_socket, tmp_path, "stopped")
    killed = await running_agent(tmux_socket, tmp_path, "killed")
    await stopped.stop()
    await killed.kill()
    assert stopped.pid is None and killed.pid is None
    assert "is gone" in await ended(stopped) and "is gone" in await ended(killed)


async def test_a_program_that_ends_by_itself_leaves_no_pid(tmux_socket, tmp_path):
    agent = await running_agent(tmux_socket, tmp_path)
    tmux(tmux_socket, "send-keys", "-t", agent.saved()["pane"], "/quit", "Enter")  # the fake ends at /quit
    assert "is gone" in await ended(agent)
    assert agent.pid is None


async def test_a_dead_pane_that_remains_shows_no_pid_and_kill_still_removes_it(tmux_socket, tmp_path):
    agent = await running_agent(tmux_socket, tmp_path)
    pane = agent.saved()["pane"]
    tmux(tmux_socket, "set-option", "-w", "-t", pane, "remain-on-exit", "on")
    tmux(tmux_socket, "send-keys", "-t", pane, "/quit", "Enter")
    assert "remains" in await ended(agent)  # dead (its status may not be known yet: tmux reaps it later)
    assert agent.pid is None
    assert pane in tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()  # dead, but there
    await agent.kill()  # still knows the pane for its own
    assert pane not in tmux(tmux_socket, "list-panes", "-a", "-F", "#{pane_id}").split()


async def test_a_restarted_server_adopting_a_live_pane_shows_its_pid(tmux_socket, tmp_path):
    old = await running_agent(tmux_socket, tmp_path)
    later = backend(tmux_socket, turn_end="quiet", quiet_seconds=0.5)  # as a restarted server makes it
    adopted = await later.adopt(session(tmp_path), old.saved())
    assert adopted is not None and adopted.pid == pane_pid(tmux_socket, adopted)
    assert_is_the_fake(adopted.pid)
    await adopted.kill()
    assert adopted.pid is None
