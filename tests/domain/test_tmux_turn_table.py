"""The tmux backend consults sessions/turns.py for the word a hook kept in the pane (real tmux, the fake agent).

A hook that found no server leaves its word in the pane's @anvilfs-hook; the
backend takes it as if the hook had written it to a server during the turn
it follows (the AGENT rows of the RUNNER phase). A row changed here changes
whether that word ends the followed turn.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from anvilfs.sessions import turns
from anvilfs.sessions.turns import Outcome, Phase, Word, Writer
from harness.deadlines import WAIT, within
from harness.tmux import PaneLooks, private_tmux
from harness.tmux_agents import HOOKS, Recorder, backend, cut_off, session, started, tmux, until

pytestmark = pytest.mark.needs("tmux")


async def test_the_row_of_a_kept_await_decides_whether_it_ends_the_followed_turn(tmp_path, monkeypatch):
    gate = tmp_path / "gate"
    env = {"ANVILFS_HOOK": str(HOOKS / "anvilfs-status"), "FAKE_AGENT_GATE": str(gate),
           "ANVILFS_ADDRESS": f"unix!{tmp_path}/no-server-here", "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    with private_tmux() as socket:
        fake = backend(socket, turn_end="hook", env=env)
        agent = await started(socket, fake.agent(session(tmp_path)))
        await cut_off(agent, socket, "fake:slow hooked", 1, gate)
        await until(lambda: tmux(socket, "show-options", "-p", "-v", "-t", agent.saved()["pane"],
                                 "@anvilfs-hook").strip() == "await")  # the hook found no server, and said so here
        monkeypatch.setitem(turns.TURNS, (Writer.AGENT, Word.AWAIT, Phase.RUNNER), Outcome.HEARD)
        adopter = backend(socket, turn_end="hook")
        adopted = await adopter.adopt(session(tmp_path), agent.saved())
        looks, done = PaneLooks(adopter.tmux), trio.Event()

        async def follow() -> None:
            await adopted.follow(Recorder(1))
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(follow)
            await looks.wait_more(3)  # looks that would each have ended the turn by the table's own row
            assert not done.is_set(), "with the row changed, the kept await only tells that the prompt went in"
            monkeypatch.undo()
            with within(WAIT, "the kept await ending the followed turn, by the table's own row"):
                await done.wait()
