"""Who may write a hook-driven agent's status (sessions/owned.py).

The agent is harness/pane_agents.py's stand-in; the test is its hook,
writing the real `status` and `out` nodes as uname `a`.
"""

from __future__ import annotations

import pytest

from anvilfs.errors import InvalidRequest, NotPermitted
from anvilfs.sessions import State
from harness.apps import until
from harness.pane_agents import hooked, write_status

async def test_status_is_written_only_by_the_sessions_own_agent(autojump_clock, running):
    app, s = await hooked(running)
    app.sessions.submit("a", "fix it", "glenda")
    await until(lambda: s.state is State.RUNNING)
    for word in ("running", "await"):
        with pytest.raises(NotPermitted, match=r"status: only a's own agent reports its turns .*uname a.*glenda is "
                                               "not it"):
            write_status(app, "a", "glenda", word)
    assert s.state is State.RUNNING and s.agent.heard == []
    write_status(app, "a", "a", "running")
    write_status(app, "a", "a", "await")
    await until(lambda: s.state is State.AWAIT)
    app.sessions.new("sim", "/tmp", name="b")  # no hook reports there, whoever writes
    with pytest.raises(InvalidRequest, match="only hook-driven .* write it; b is on sim backend sim"):
        write_status(app, "b", "b", "await")
