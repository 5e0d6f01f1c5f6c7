"""Answering approval requests on a real server: who may, what every waiting request takes, and the ctl line.

    `anvilfs approve|reject` answer a request human/approvals lists by mail, and a bead that waits with no
    request there (its convoy's coordinator was asked) on the bead's ctl, its reason quoted; the assignee
    is refused on every route; a request from a lease holder or a removed session is answered all the same.
"""

from __future__ import annotations

import json

import pytest

from anvilfs.client import Client, ServerError
from anvilfs.mail import MessageType
from anvilfs.ninep import Dialect
from anvilfs.ninep import consts as c
from harness.mailbox import stored
from harness.old_mail import OldMailFiles, message
from harness.server import AnvilServer, anvil_server, start_server


@pytest.fixture
def srv():
    with anvil_server(trace=False) as server:
        for name in ("dev", "lead"):
            ok(server, "write", "agent/ctl", f"new sim /tmp name={name}")
        yield server


def ok(srv: AnvilServer, *args: str, env: dict | None = None) -> str:
    result = srv.run_cli(*args, env=env)
    assert result.returncode == 0, f"anvilfs {' '.join(args)}: {result.stderr}"
    return result.stdout


def refused(srv: AnvilServer, *args: str, env: dict | None = None) -> str:
    result = srv.run_cli(*args, env=env)
    assert result.returncode != 0, f"anvilfs {' '.join(args)} should have been refused: {result.stdout}"
    return result.stderr


def read_back(client: Client, path: str, line: str) -> str:
    """Write one ctl line and read the answer on the same fid (the new id)."""
    return client.read_back(path, line.encode()).decode().strip()


def bead_waiting(srv: AnvilServer, *, coordinator: str = "", holder: str = "dev") -> str:
    """A bead that requires approval, claimed by `holder` and completed: it waits for approval."""
    with srv.connect() as client:
        convoy = ""
        if coordinator:
            convoy = read_back(client, "convoys/ctl", 'new "Auth" "OAuth for the app"\n')
            client.write_file(f"convoys/{convoy}/ctl", f"coordinator {coordinator}\n".encode())
        more = f" convoy={convoy}" if convoy else ""
        bead = read_back(client, "beads/ctl", f'new "Implement OAuth" developer "Add OAuth" requires_approval=true{more}\n')
        claim = f"claim {holder}" + ("" if holder in ("dev", "lead") else " lease=600")
        client.write_file(f"beads/{bead}/ctl", f"{claim}\n".encode())
        client.write_file(f"beads/{bead}/ctl", b"complete all tests pass\n")
        assert client.read_file(f"beads/{bead}/status") == b"pending_approval\n"
    return bead


def status(srv: AnvilServer, bead: str) -> str:
    return ok(srv, "read", f"agent/beads/{bead}/status").strip()


# ------------------------------------------------------------ the ctl line (item 8 of issue 32)

def test_a_reason_with_an_apostrophe_reaches_the_beads_ctl_quoted(srv):
    bead = bead_waiting(srv, coordinator="lead")  # the coordinator was asked: human/approvals has no line for it
    assert ok(srv, "read", "agent/human/approvals") == ""
    ok(srv, "reject", bead, "it's", "missing  tests")
    assert status(srv, bead) == "in_progress"
    assert ok(srv, "read", f"agent/beads/{bead}/review") == "it's missing  tests\n"


def test_a_reason_with_a_newline_is_carried_whole_and_runs_no_second_command(srv):
    bead = bead_waiting(srv, coordinator="lead")
    ok(srv, "reject", bead, "looks wrong\nunclaim")  # on the bead's ctl: it was `reject looks wrong`, then `unclaim`
    assert status(srv, bead) == "in_progress"
    assert ok(srv, "read", f"agent/beads/{bead}/assigned_to") == "dev\n"  # not unclaimed
    assert ok(srv, "read", f"agent/beads/{bead}/review") == "looks wrong\nunclaim\n"
    request = ask_human(srv, "dev", "deploy")  # a request human/approvals lists: answered by mail
    ok(srv, "reject", request, "not now\tplease\nafter the freeze")
    [answer] = [m for m in inbox_messages(srv, "dev") if m.get("re") == request]
    assert (answer["subject"], answer["body"]) == ("rejected: not now please", "not now\tplease\nafter the freeze")


def test_an_id_that_is_no_name_is_refused_before_any_write(srv):
    bead = bead_waiting(srv, coordinator="lead")
    why = refused(srv, "approve", f"{bead}/../../dev")
    assert "no request or bead id" in why, why
    assert status(srv, bead) == "pending_approval"


def mail_as(srv: AnvilServer, uname: str, owner: str, message: dict) -> str:
    with srv.connect(uname=uname, dialect=Dialect.P2000U) as client:
        try:
            fid = client.open(f"{owner}/mail", c.ORDWR)
        except ServerError as exc:  # a session's agent opening another's mail (sessions/acting.py)
            return f"error: {exc}"
        try:
            try:
                client.write_all(fid, json.dumps(message).encode())
            except ServerError as exc:  # refused at the Twrite
                return f"error: {exc}"
            return client.read_chunk(fid, 0).decode().strip()
        finally:
            client.clunk(fid)


# ------------------------------------------------------------ a session named approvals (item 2)

def restarted(srv: AnvilServer) -> AnvilServer:
    assert srv.stop() == 0, srv.trace_tail()
    return start_server(srv.base, trace=False)


def inbox_messages(srv: AnvilServer, who: str) -> list[dict]:
    with srv.connect() as client:
        return [json.loads(client.read_file(f"{who}/inbox/{s.name}")) for s in client.list_dir(f"{who}/inbox")]


def inbox_subjects(srv: AnvilServer, who: str) -> list[str]:
    return sorted(m["subject"] for m in inbox_messages(srv, who))


def ask_human(srv: AnvilServer, sender: str, subject: str) -> str:
    return mail_as(srv, sender, sender, {"to": "human", "type": "APPROVAL_REQUEST", "subject": subject, "body": ""})


@pytest.fixture
def stopped_later():
    """Servers a test starts itself, stopped at its end."""
    started: list[AnvilServer] = []
    yield started
    for srv in started:
        srv.stop()


def test_a_session_named_approvals_keeps_its_mail_and_the_requests_stay_where_they_are(srv, stopped_later):
    ok(srv, "write", "agent/ctl", "new sim /tmp name=approvals")
    ok(srv, "mail", "approvals", "QUERY_REQUEST", "lunch?")
    ident = ask_human(srv, "dev", "deploy")
    bead = bead_waiting(srv)
    srv = restarted(srv)
    stopped_later.append(srv)
    assert inbox_subjects(srv, "approvals") == ["lunch?"]
    waiting = ok(srv, "read", "agent/human/approvals").splitlines()
    assert [line.split()[0] for line in waiting][0] == ident and len(waiting) == 2, waiting
    ok(srv, "write", "agent/approvals/ctl", "stop")  # a per-turn session goes on after a restart (SPEC §5)
    ok(srv, "write", "agent/approvals/ctl", "remove")
    srv = restarted(srv)
    stopped_later.append(srv)
    assert len(ok(srv, "read", "agent/human/approvals").splitlines()) == 2  # the requests did not go with it
    ok(srv, "approve", ident)
    ok(srv, "approve", bead)
    assert status(srv, bead) == "completed"
    assert ok(srv, "read", "agent/human/approvals") == ""


def test_a_state_directory_of_the_old_layout_with_such_a_session_keeps_working(srv, stopped_later):
    """Before, waiting requests were kept in STATE/mail/approvals/, a session `approvals`'s mailbox beside them
    (the files as anvilfs wrote them then: tests/harness/old_mail.py); they are imported into the database."""
    ok(srv, "write", "agent/ctl", "new sim /tmp name=approvals")
    assert srv.stop() == 0
    old = OldMailFiles(srv.state)
    old.deliver(message(1, "human", "approvals", "lunch?"))
    request = message(2, "dev", "human", "deploy", MessageType.APPROVAL_REQUEST)
    old.wait_for_answer(request, where="mail/approvals")
    old.deliver(request)
    srv = start_server(srv.base, trace=False)
    stopped_later.append(srv)
    assert [line.split()[0] for line in ok(srv, "read", "agent/human/approvals").splitlines()] == [request.id]
    assert inbox_subjects(srv, "approvals") == ["lunch?"]
    assert not (srv.state / "mail").exists()  # imported, and moved away
    [moved] = (srv.state / "imported").iterdir()
    assert sorted(p.name for p in (moved / "mail" / "approvals").iterdir()) == [f"{request.id}.json", "inbox"]
    ok(srv, "approve", request.id)
    assert inbox_subjects(srv, "dev") == ["approved"]


# ------------------------------------------------------------ never the worker, on any route (item 3)

def test_the_worker_cannot_approve_its_own_bead_through_the_cli_as_itself(srv):
    bead = bead_waiting(srv)
    why = refused(srv, "approve", bead, env={"ANVILFS_SESSION": "dev"})  # it writes human/mail, attached as dev
    assert "dev did the work" in why, why
    why = refused(srv, "reject", bead, "fine", "really", env={"ANVILFS_SESSION": "dev"})
    assert "dev did the work" in why, why
    assert status(srv, bead) == "pending_approval"
    assert len(ok(srv, "read", "agent/human/approvals").splitlines()) == 1  # still waiting for someone else
    ok(srv, "approve", bead, env={"ANVILFS_SESSION": "lead"})
    assert status(srv, bead) == "completed"
    assert 'approved_by = "lead"' in (srv.state / "beads" / f"{bead}.toml").read_text()  # as itself, on the ctl


@pytest.mark.parametrize("holder", ["dev", "ci-bot"])
def test_the_worker_cannot_approve_by_writing_human_mail_itself(srv, holder):
    bead = bead_waiting(srv, holder=holder)
    [line] = ok(srv, "read", "agent/human/approvals").splitlines()
    request, sender = line.split()[:2]
    answer = {"to": sender, "type": "APPROVAL_RESPONSE", "subject": "approved", "body": "", "re": request}
    with srv.connect(uname=holder, dialect=Dialect.P2000U) as client:
        if holder == "dev":  # a session's agent writes no mail but its own (sessions/acting.py): refused at the open
            with pytest.raises(ServerError, match="session dev's agent sends mail from its own mail file"):
                client.open("human/mail", c.ORDWR)
        else:  # a lease holder is no session: refused at the Twrite, where `9p write` sees it
            fid = client.open("human/mail", c.ORDWR)
            with pytest.raises(ServerError, match=f"{holder} did the work"):
                client.write_all(fid, json.dumps(answer).encode())
            client.clunk(fid)
    assert status(srv, bead) == "pending_approval"
    assert mail_as(srv, "tester", "human", answer).isdigit()  # anyone else may
    assert status(srv, bead) == "completed"


def test_who_asked_for_an_approval_cannot_answer_it_in_humans_name(srv):
    ident = ask_human(srv, "dev", "deploy")
    answer = {"to": "dev", "type": "APPROVAL_RESPONSE", "subject": "approved", "body": "", "re": ident}
    # dev is a session: it may not write human's mail at all (sessions/acting.py), its own request's answer least
    assert "session dev's agent sends mail from its own mail file" in mail_as(srv, "dev", "human", answer)
    assert ok(srv, "read", "agent/human/approvals").split()[0] == ident


# ------------------------------------------------------------ every waiting request is answerable (item 4)

def test_a_lease_holders_request_is_answered_and_the_answer_kept_with_its_record(srv):
    bead = bead_waiting(srv, holder="ci-bot")
    [line] = ok(srv, "read", "agent/human/approvals").splitlines()
    request = line.split()[0]
    assert line.split()[1] == "anvilfs"
    answer = ok(srv, "approve", bead).strip()
    assert status(srv, bead) == "completed"
    assert ok(srv, "read", "agent/human/approvals") == ""
    [(kept_request, kept_answer)] = kept_records(srv)
    assert (kept_request["id"], kept_answer["id"], kept_answer["to"]) == (request, answer, "anvilfs")


def test_a_request_of_a_removed_session_is_answered(srv):
    bead = bead_waiting(srv)
    ident = ask_human(srv, "dev", "deploy")
    ok(srv, "write", "agent/dev/ctl", "stop")
    ok(srv, "write", "agent/dev/ctl", "remove")
    ok(srv, "reject", ident, "not", "now")
    ok(srv, "approve", bead)
    assert status(srv, bead) == "completed"
    assert ok(srv, "read", "agent/human/approvals") == ""
    kept = {request.get("bead"): (request["id"], answer["to"]) for request, answer in kept_records(srv)}
    assert kept[None] == (ident, "dev") and kept[bead][1] == "dev", kept  # each kept with its answer


def kept_records(srv: AnvilServer) -> list[tuple[dict, dict]]:
    """The answered requests whose answer no inbox took: kept in the database with their answers."""
    return [(json.loads(request), json.loads(answer))
            for request, answer in stored(srv.state, "SELECT request, answer FROM approvals WHERE kept = 1 ORDER BY id")]


# ------------------------------------------------------------ an answer without "re" (item 12)

def test_an_answer_as_ideas_md_writes_it_answers_the_one_request_of_that_session(srv):
    ident = ask_human(srv, "dev", "OAuth implementation")
    ask_human(srv, "lead", "deploy")  # another session's request: not the one answered
    answer = mail_as(srv, "tester", "human", {"to": "dev", "type": "APPROVAL_RESPONSE", "subject": "Approved",
                                              "body": "LGTM - OAuth implementation looks good."})
    assert answer.isdigit(), answer
    with srv.connect() as client:
        got = json.loads(client.read_file(f"dev/inbox/{answer}.json"))
    assert (got["re"], got["subject"]) == (ident, "Approved")
    assert [line.split()[1] for line in ok(srv, "read", "agent/human/approvals").splitlines()] == ["lead"]


def test_an_answer_without_re_is_refused_naming_the_requests_when_not_exactly_one_waits(srv):
    first, second = ask_human(srv, "dev", "one"), ask_human(srv, "dev", "two")
    response = {"to": "dev", "type": "APPROVAL_RESPONSE", "subject": "approved", "body": ""}
    why = mail_as(srv, "tester", "human", response)
    assert why.startswith("error: ") and first in why and second in why and '"re"' in why, why
    why = mail_as(srv, "tester", "human", response | {"to": "lead"})
    assert why.startswith("error: ") and "no approval request of lead" in why and first in why, why
    assert inbox_subjects(srv, "dev") == [] and inbox_subjects(srv, "lead") == []
    assert len(ok(srv, "read", "agent/human/approvals").splitlines()) == 2
