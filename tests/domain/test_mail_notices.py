"""Notices for sessions that ask for them, and approval requests announced again while they wait (in-process, trio)."""

from __future__ import annotations

import pytest
import trio

from anvilfs.app import MailSettings
from anvilfs.errors import InvalidRequest
from anvilfs.mail import Draft, MessageType
from anvilfs.sessions import State
from harness.apps import until


def query(to: str, subject: str) -> Draft:
    return Draft(to=to, type=MessageType.QUERY_REQUEST, subject=subject, body="")


def notices(session) -> list[str]:
    """The notice prompts in the transcript (the sim agent's answer quotes the prompt's first line: left out)."""
    return [line for line in session.log_text().splitlines() if line.startswith(("1 new message", "3 new messages"))]


async def test_an_idle_session_that_asked_is_prompted_once_per_arrival(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot", notify=True)
    await until(lambda: s.state is State.IDLE)
    app.post.send("human", query("bot", "are you there?"))
    await until(lambda: s.state is State.AWAIT, "the notice turn")
    line = notices(s)[0]
    assert s.turn_count == (1 if "1 new" in line else 2), s.log_text()  # one notice turn, not more
    assert "1 new message:" in line and "QUERY_REQUEST from human: are you there?" in line


async def test_a_busy_session_gets_one_coalesced_notice_after_its_turn_never_an_interruption(autojump_clock, running):
    app = await running()
    s = app.sessions.new("sim", "/tmp", name="bot", notify=True)
    app.sessions.submit("bot", "a long piece of work", "glenda")
    await until(lambda: s.state is State.RUNNING)
    turn = s.turn
    for i in range(3):
        app.post.send("human", query("bot", f"q{i}"))
    assert s.turn is turn and s.state is State.RUNNING and not s.queue  # nothing interrupted, nothing queued yet
    await until(lambda: s.turn_count == 2 and s.state is State.AWAIT, "the work, then one notice")
    line = notices(s)[0]
    assert s.turn_count == (1 if "1 new" in line else 2), s.log_text()  # one notice turn, not more
    assert "3 new messages:" in line and all(f"q{i}" in line for i in range(3))
    assert "--- interrupted" not in s.log_text()


async def test_no_notice_without_asking_or_for_mail_already_acknowledged(autojump_clock, running):
    app = await running(mail=MailSettings(notice="mail: {count} {list}"))
    plain = app.sessions.new("sim", "/tmp", name="plain")
    asked = app.sessions.new("sim", "/tmp", name="asked", notify=True)
    app.sessions.submit("asked", "work", "glenda")
    await until(lambda: asked.state is State.RUNNING and plain.state is State.IDLE)
    app.post.send("human", query("plain", "hello"))
    read = app.post.send("human", query("asked", "read at once"))
    app.post.ack("asked", read.id)
    kept = app.post.send("human", query("asked", "still unread"))
    await until(lambda: asked.turn_count == 2 and asked.state is State.AWAIT)
    await trio.sleep(5)  # virtual time: long enough for a wrong notice to arrive
    assert plain.turn_count == 0 and notices(plain) == []
    assert [ln for ln in asked.log_text().splitlines() if ln.startswith("mail: ")] == [f"mail: 1 {kept.id} QUERY_REQUEST from human: still unread"]


async def test_ephemeral_sessions_never_take_notices(running):
    app = await running()
    with pytest.raises(InvalidRequest, match="ephemeral"):
        app.sessions.new("sim", "/tmp", name="once", ephemeral=True, notify=True)
    assert app.sessions.find("once") is None


async def test_a_waiting_approval_is_announced_again_until_answered_and_only_announced(autojump_clock, running):
    app = await running(mail=MailSettings(approval_reminder=60))
    app.sessions.new("sim", "/tmp", name="dev")
    request = app.post.send("dev", Draft(to="human", type=MessageType.APPROVAL_REQUEST, subject="ship it?", body=""))
    await trio.sleep(150)
    again = [ln for ln in app.events.text().splitlines() if f"mail:{request.id} APPROVAL_REQUEST waiting since" in ln]
    assert len(again) == 2 and "from dev to human: ship it?" in again[0]
    assert [m.id for m in app.post.inbox("human")] == [request.id]  # announced, never sent again
    app.post.send("human", Draft(to="dev", type=MessageType.APPROVAL_RESPONSE, subject="approved", body="", re=request.id))
    await trio.sleep(300)
    assert len([ln for ln in app.events.text().splitlines() if "waiting since" in ln]) == 2
    assert app.post.approvals.waiting() == []


async def test_a_session_with_the_tools_is_told_to_use_them(autojump_clock, running, tmp_path):
    """A backend with mcp = true (here a stand-in `claude`: a shell script that says it is one and echoes its
    prompt) gets the notice that names the tools; the files' notice would send it to a directory it lacks."""
    from anvilfs.backends import CommandBackend
    from anvilfs.config.model import CommandBackendConfig

    (tmp_path / "claude").write_text("#!/bin/sh\necho '[stand-in claude, not the real CLI]'; cat\n")
    (tmp_path / "claude").chmod(0o755)
    config = CommandBackendConfig(kind="command", argv=[str(tmp_path / "claude")], mcp=True)
    app = await running(backends={"claude": CommandBackend("claude", config)})
    s = app.sessions.new("claude", str(tmp_path), name="bot", notify=True)
    app.post.send("human", query("bot", "are you there?"))
    await until(lambda: s.state is State.AWAIT, "the notice turn")
    assert "read_message (mcp__anvilfs__read_message)" in s.log_text()
    assert "cat inbox/" not in s.log_text()
