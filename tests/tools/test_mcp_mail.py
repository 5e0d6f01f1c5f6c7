"""`anvilfs mcp`'s mail and approval tools, and a conductor's, through the MCP SDK's client and a real server."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import pytest
from harness.mcp_tools import ToolRefused, anvilfs_command, client_rdwr, read, team, tool_client


def mail_from(srv, sender: str, message: dict) -> str:
    with srv.connect(sender) as client:
        return client_rdwr(client, f"{'human' if sender == 'human' else sender}/mail", json.dumps(message))


def test_a_bot_reads_and_acknowledges_its_inbox_and_sends_mail():
    with team(("bot1", "developer")) as srv:
        sent = mail_from(srv, "human", {"to": "bot1", "type": "QUERY_REQUEST", "subject": "status?", "body": "how far?"})
        with tool_client(srv, "bot1") as tools:
            assert "inbox: 1 message" in tools.call("my_work")
            listing = tools.call("inbox")
            assert f"{sent} from human QUERY_REQUEST: status?" in listing
            message = json.loads(tools.call("read_message", id=sent))
            assert message["body"] == "how far?"
            answer = tools.call("send_mail", to="human", type="QUERY_RESPONSE", subject="half way", body="50%", re=sent)
            tools.call("ack", id=sent)
            assert tools.call("inbox") == "your inbox is empty"
            with pytest.raises(ToolRefused):
                tools.call("read_message", id=sent)
        replies = [json.loads(read(srv, f"human/inbox/{name}")) for name in read_names(srv, "human/inbox")]
    assert [(r["id"], r["from"], r["re"]) for r in replies] == [(answer.split()[1], "bot1", sent)]


def read_names(srv, path: str) -> list[str]:
    with srv.connect("glenda") as client:
        return sorted(stat.name for stat in client.list_dir(path))


def test_the_approval_round_trip_through_the_tools_and_anvilfs_approve():
    with team(("bot1", "developer")) as srv:
        with tool_client(srv, "bot1") as tools:
            said = tools.call("request_approval", subject="merge the fix?", body="tests pass")
            request = said.split()[1]
            assert "end your turn" in said
            assert read(srv, "human/approvals").startswith(f"{request} bot1 - merge the fix?")
            approved = subprocess.run([anvilfs_command(), "approve", request], env=os.environ | srv.env(),
                                      capture_output=True, text=True, timeout=30)
            assert approved.returncode == 0, approved.stderr
            (line,) = tools.call("inbox").splitlines()[1:]
            answer = line.split()[0]
            assert "from human APPROVAL_RESPONSE: approved" in line
            assert json.loads(tools.call("read_message", id=answer))["re"] == request
            tools.call("ack", id=answer)
        assert read(srv, "human/approvals") == ""


def test_no_tool_reaches_past_the_session():
    with team(("bot1", "developer"), ("bot2", "developer")) as srv:
        mail_from(srv, "human", {"to": "bot2", "type": "QUERY_REQUEST", "subject": "for bot2", "body": "x"})
        with tool_client(srv, "bot1") as tools:
            with pytest.raises(ToolRefused, match="no tool 'prompt' here"):
                tools.call("prompt", session="bot2", text="do this")
            with pytest.raises(ToolRefused, match="is no path in the tree"):
                tools.call("read", path="../../etc/passwd")
            with pytest.raises(ToolRefused, match="blocks until"):
                tools.call("read", path="bot2/wait")
            assert tools.call("inbox") == "your inbox is empty", "bot2's mail is not bot1's"
            sent = tools.call("send_mail", to="bot2", type="QUERY_REQUEST", subject="hi", body="b").split()[1]
        (name,) = [n for n in read_names(srv, "bot2/inbox") if n.startswith(sent)]
        assert json.loads(read(srv, f"bot2/inbox/{name}"))["from"] == "bot1", "mail is from the session, always"
        assert read(srv, "bot2/queue") == "", "bot1 could not prompt bot2"


def test_the_server_refuses_to_start_without_the_sessions_identity():
    run = subprocess.run([anvilfs_command(), "mcp"], env={"PATH": os.environ["PATH"]}, capture_output=True,
                         text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert run.returncode == 2 and "ANVILFS_SESSION is not set" in run.stderr


def test_a_conductor_starts_prompts_and_waits_on_sessions_inside_its_directory():
    with team() as srv, tempfile.TemporaryDirectory(prefix="cond.") as home:
        os.mkdir(os.path.join(home, "work"))
        srv.run_cli("write", "agent/ctl", f"new sim {home} name=boss conductor")
        with tool_client(srv, "boss", conductor=True) as tools:
            assert {"prompt", "new_session", "wait"} <= set(tools.names)
            with pytest.raises(ToolRefused, match="outside your own directory"):
                tools.call("new_session", backend="sim", cwd="../")
            made = tools.call("new_session", backend="sim", cwd="work", name="w1")
            assert made == "made session w1"
            assert read(srv, "w1/cwd").strip() == os.path.join(home, "work")
            tools.call("prompt", session="w1", text="hello")
            assert tools.call("wait", session="w1").startswith("w1: await")
        assert "hello" in read(srv, "w1/out")


def test_a_long_answer_is_cut_saying_so():
    with team(("bot1", "developer")) as srv:
        srv.run_cli("write", "agent/bot1/in", input="x" * 100_000)
        srv.run_cli("read", "agent/bot1/wait")
        with tool_client(srv, "bot1") as tools:
            text = tools.call("read", path="bot1/log")
    assert len(text) < 66_000 and text.endswith("more characters not shown: the answer is cut at 65536]")


def test_a_session_sends_mail_as_itself_only_through_the_shell_path_too():
    """The shell path's `anvilfs write` attaches as the session ($ANVILFS_SESSION) and reaches any file: the
    server itself keeps a session from writing human's mail (answering its own approval request) or a peer's."""
    with team(("bot1", "developer"), ("bot2", "developer")) as srv:
        with tool_client(srv, "bot1") as tools:
            request = tools.call("request_approval", subject="delete the old API?", body="x").split()[1]
        answer = {"to": "bot1", "type": "APPROVAL_RESPONSE", "subject": "approved", "body": "ok", "re": request}
        as_bot1 = {"ANVILFS_SESSION": "bot1"}
        posed = srv.run_cli("write", "agent/human/mail", input=json.dumps(answer), env=as_bot1)
        assert posed.returncode == 1 and "session bot1's agent sends mail from its own mail file (bot1/mail)" \
            in posed.stderr
        peer = {"to": "human", "type": "QUERY_REQUEST", "subject": "s", "body": "b"}
        assert srv.run_cli("write", "agent/bot2/mail", input=json.dumps(peer), env=as_bot1).returncode == 1
        assert srv.run_cli("write", "agent/bot1/mail", input=json.dumps(peer), env=as_bot1).returncode == 0
        assert read(srv, "human/approvals").startswith(request), "the request still waits for the human"


def test_only_a_conductor_starts_sessions_and_only_inside_its_directory_through_the_shell_path_too():
    with team(("bot1", "developer")) as srv, tempfile.TemporaryDirectory(prefix="cond.") as home:
        os.mkdir(os.path.join(home, "work"))
        srv.run_cli("write", "agent/ctl", f"new sim {home} name=boss conductor")

        def new_as(session: str, cwd: str):
            return srv.run_cli("write", "agent/ctl", f"new sim {cwd}", env={"ANVILFS_SESSION": session})

        refused = new_as("bot1", home)
        assert refused.returncode == 1 and "session bot1's agent may not start sessions" in refused.stderr
        outside = new_as("boss", "/")
        assert outside.returncode == 1 and "a conductor session starts sessions inside its own cwd" in outside.stderr
        assert new_as("boss", os.path.join(home, "work")).returncode == 0
        assert srv.run_cli("write", "agent/ctl", "new sim /").returncode == 0, "a person starts them anywhere"
