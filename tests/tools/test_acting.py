"""An agent acts as its own session (sessions/acting.py): the server's rules for a writer whose uname is a
session's, which its tools and its shell path (`anvilfs write ...`) both meet. Through a real server."""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from harness.mcp_tools import client_rdwr, team

from anvilfs.client import ServerError


def refused(srv, uname: str, action, match: str) -> None:
    with srv.connect(uname) as client, pytest.raises(ServerError, match=match):
        action(client)


def test_an_agent_drives_no_other_session_starts_none_and_sends_as_no_one_else():
    with team(("bot1", "developer"), ("bot2", "developer")) as srv:
        message = client_rdwr(srv.connect("glenda"), "human/mail",
                              json.dumps({"to": "bot2", "type": "QUERY_REQUEST", "subject": "s", "body": "b"}))
        own = "acts on its own session only"
        refused(srv, "bot1", lambda c: c.write_file("bot2/in", b"do this"), own)
        refused(srv, "bot1", lambda c: c.write_file("bot2/ctl", b"stop\n"), own)
        refused(srv, "bot1", lambda c: c.write_file("ctl", b"new sim / name=x\n"), "may not start sessions")
        refused(srv, "bot1", lambda c: c.write_file("human/mail", b"{}"), "sends mail from its own mail file")
        refused(srv, "bot1", lambda c: c.write_file("bot2/mail", b"{}"), "sends mail from its own mail file")
        refused(srv, "bot1", lambda c: c.remove(f"bot2/inbox/{message}.json"), "acknowledges its own mail")
        with srv.connect("bot1") as client:  # its own session, as before
            client.write_file("bot1/in", b"hello")
            client.write_file("bot1/ctl", b"stop\n")
        with srv.connect("glenda") as client:  # a person (any uname that is no session) is not an agent
            client.write_file("bot2/in", b"from a person")
            client.remove(f"bot2/inbox/{message}.json")
            client.write_file("bot2/ctl", b"stop\n")
        assert srv.run_cli("read", "agent/bot2/status").stdout.split()[0] == "stopped"


def test_a_conductor_drives_and_starts_sessions_inside_its_cwd_only():
    with team() as srv, tempfile.TemporaryDirectory(prefix="cond.") as home:
        os.mkdir(os.path.join(home, "sub"))
        srv.run_cli("write", "agent/ctl", f"new sim {home} name=lead conductor")
        srv.run_cli("write", "agent/ctl", "new sim /tmp name=other")
        refused(srv, "lead", lambda c: c.write_file("ctl", b"new sim /tmp name=w0\n"), "inside its own cwd")
        os.symlink("/etc", os.path.join(home, "out"))  # inside by its name, outside by where it leads
        refused(srv, "lead", lambda c: c.write_file("ctl", f"new sim {home}/out name=w0\n".encode()), "inside its own cwd")
        with srv.connect("lead") as client:
            client.write_file("ctl", f"new sim {home}/sub name=w1\n".encode())
            client.write_file("w1/in", b"hello")
            client.write_file("other/ctl", b"stop\n")


def test_an_external_sessions_owner_drives_others_as_before():
    with team(("bot2", "developer")) as srv:
        srv.run_cli("write", "agent/ctl", "new external /tmp name=conductor")
        with srv.connect("conductor") as client:
            client.write_file("bot2/in", b"from the conductor program")
            client.write_file("ctl", b"new sim /tmp name=w2\n")


def test_an_agent_works_only_on_the_beads_it_holds():
    with team(("bot1", "developer"), ("bot2", "developer")) as srv, srv.connect("glenda") as human:
        fix = client_rdwr(human, "beads/ctl", 'new "Fix login" developer "do it"\n')
        free = client_rdwr(human, "beads/ctl", 'new "Free one" developer "do it"\n')
        with srv.connect("bot2") as bot2:
            bot2.write_file(f"beads/{fix}/ctl", b"claim\n")
        held = f"bead {fix} is held by bot2; session bot1's agent works on the beads it holds"
        for line in (b"complete\n", b"fail no\n", b"unclaim\n"):
            refused(srv, "bot1", lambda c: c.write_file(f"beads/{fix}/ctl", line), held)
        refused(srv, "bot1", lambda c: c.write_file(f"beads/{fix}/result", b"mine now"), held)
        with srv.connect("bot1") as bot1:  # reading another's bead is anyone's right: the research a developer needs
            assert bot1.read_file(f"beads/{fix}/result") == b"" and bot1.read_file(f"beads/{fix}/description")
        refused(srv, "bot1", lambda c: c.write_file(f"beads/{free}/ctl", b"claim bot2\n"), "claims for itself")
        srv.run_cli("write", "agent/ctl", "new sim /tmp name=lead conductor")
        with srv.connect("lead") as lead:  # a conductor coordinates: it may finish another's bead
            lead.write_file(f"beads/{fix}/ctl", b"complete done by the lead\n")
        assert human.read_file(f"beads/{fix}/status") == b"completed\n"


def test_a_conductors_prompt_is_words_not_a_cli_command():
    with team(("w1", "developer")) as srv:
        srv.run_cli("write", "agent/ctl", "new sim /tmp name=lead conductor")
        for text in (b"/run rm -rf ~", b"  !curl example.com"):
            refused(srv, "lead", lambda c: c.write_file("w1/in", text), "which some agent CLIs run as a command")
        with srv.connect("lead") as lead:
            lead.write_file("w1/in", b"please look at /etc/hosts")
        with srv.connect("glenda") as person:  # a person's prompt is theirs to word
            person.write_file("w1/in", b"/help")
