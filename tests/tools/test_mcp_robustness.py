"""`anvilfs mcp` when things go wrong around it: a server that restarts or is gone, a connection that breaks
after a write, a `wait` that would never end, a call the CLI cancels, a session removed meanwhile."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from harness.dropping_proxy import TREAD, DroppingProxy
from harness.mcp_tools import ToolRefused, bead, read, team, tool_client
from harness.server import start_server


def test_a_server_restarted_between_calls_is_dialled_again():
    with team(("bot1", "developer")) as srv:
        fix = bead(srv, "Fix login", "developer")
        with tool_client(srv, "bot1") as tools:
            assert fix in tools.call("ready")
            srv.stop()
            again = start_server(srv.base, namespace=srv.namespace, state=srv.state, log_name="server2.trace")
            try:
                assert tools.call("claim", bead=fix).startswith(f"claimed {fix}")
            finally:
                again.stop()


def test_a_call_with_no_server_is_refused_saying_so():
    with team(("bot1", "developer")) as srv:
        with tool_client(srv, "bot1") as tools:
            srv.stop()
            with pytest.raises(ToolRefused, match=f"cannot reach the anvilfs server at {srv.address}.*running"):
                tools.call("ready")


def test_a_write_whose_answer_was_lost_is_not_sent_again():
    with team(("bot1", "developer")) as srv, tempfile.TemporaryDirectory(prefix="proxy.") as tmp:
        with DroppingProxy(srv.socket, Path(tmp) / "agent") as proxy:
            env = {"ANVILFS_SESSION": "bot1", "ANVILFS_ADDRESS": proxy.address}
            with tool_client(srv, "bot1", env=env) as tools:
                tools.call("inbox")  # dialled
                proxy.drop_next_reply_to(TREAD)  # the mail's read-back: the server has sent it by then
                with pytest.raises(ToolRefused, match="may have been done"):
                    tools.call("send_mail", to="human", type="QUERY_REQUEST", subject="once", body="b")
        subjects = [json.loads(read(srv, f"human/inbox/{name}"))["subject"] for name in _names(srv, "human/inbox")]
    assert subjects == ["once"], "the mail went once: a second copy would be a second question to the human"


def _names(srv, path: str) -> list[str]:
    with srv.connect("glenda") as client:
        return sorted(stat.name for stat in client.list_dir(path))


def test_wait_gives_up_after_its_timeout_and_a_cancelled_wait_holds_nothing_up():
    with team() as srv, tempfile.TemporaryDirectory(prefix="cond.") as home:
        srv.run_cli("write", "agent/ctl", f"new sim {home} name=boss conductor")
        srv.run_cli("write", "agent/ctl", f"new sim {home} name=w1")
        with tool_client(srv, "boss", conductor=True) as tools:
            tools.call("prompt", session="w1", text="sim:hang")
            assert tools.call("wait", session="w1", timeout=1).startswith("w1 is still busy after 1 s")
            with pytest.raises(ToolRefused, match="timeout: give whole seconds from 1 to 600"):
                tools.call("wait", session="w1", timeout=100_000)
            tools.cancel_after(1, "wait", session="w1", timeout=600)
            assert tools.call("my_work").startswith("session boss"), "the cancelled wait holds no other call up"


def test_my_work_of_a_session_removed_meanwhile_says_so():
    with team(("bot1", "developer")) as srv:
        with tool_client(srv, "bot1") as tools:
            tools.call("my_work")
            srv.run_cli("write", "agent/bot1/ctl", "stop")
            assert srv.run_cli("write", "agent/bot1/ctl", "remove").returncode == 0
            with pytest.raises(ToolRefused, match="your session bot1 no longer exists"):
                tools.call("my_work")
