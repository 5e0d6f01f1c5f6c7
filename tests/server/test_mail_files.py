"""Mail through real 9P on a real server: sending, read-back, inboxes, acks, limits, bad input, approvals, the CLI."""

from __future__ import annotations

import contextlib

import errno
import json
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from anvilfs.client import Client, ServerError
from anvilfs.ninep import Dialect
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from harness.mailbox import stored
from harness.server import REPO_ROOT, AnvilServer, anvil_server

MSG = {"to": "human", "type": "QUERY_REQUEST", "subject": "where is the config?", "body": "thanks"}


def refusal(client: Client, msg: m.Message) -> tuple[int, str]:
    """The errno and text of the Rerror that `msg` must get."""
    reply = client.exchange(msg)
    assert isinstance(reply, m.Rerror), f"{msg} was answered {reply}, not refused"
    return reply.errno, reply.ename


def write_mail(client: Client, owner: str, data: bytes) -> str:
    """Write one message and read it back on the same fid: the id, or 'error: ...' (from the Twrite or the read)."""
    fid = client.open(f"{owner}/mail", c.ORDWR)
    try:
        try:
            client.write_all(fid, data)
        except ServerError as exc:
            return f"error: {exc}"
        return client.read_chunk(fid, 0).decode()
    finally:
        client.clunk(fid)


def names(client: Client, path: str) -> list[str]:
    return sorted(s.name for s in client.list_dir(path))


def message(client: Client, path: str) -> dict:
    return json.loads(client.read_file(path))


@pytest.fixture
def srv():
    with anvil_server(trace=False) as server:
        with server.connect(dialect=Dialect.P2000U) as client:
            client.write_file("ctl", b"new sim /tmp name=dev\n")
            client.write_file("ctl", b"new sim /tmp name=rev\n")
        yield server


def test_a_message_is_sent_from_the_files_owner_and_waits_in_the_inbox_until_rm(srv):
    with srv.connect(uname="somebody-else", dialect=Dialect.P2000U) as client:
        events = client.open("events", c.OREAD)  # it shows what happens from its open on
        answer = write_mail(client, "dev", json.dumps(MSG).encode())
        assert answer.endswith("\n") and len(answer.strip()) == 16 and answer.strip().isdigit(), answer
        ident = answer.strip()
        assert names(client, "human/inbox") == [f"{ident}.json"]
        got = message(client, f"human/inbox/{ident}.json")
        assert got["from"] == "dev" and got["to"] == "human" and got["id"] == ident and got["timestamp"]
        assert {k: got[k] for k in MSG} == MSG
        message(client, f"human/inbox/{ident}.json")  # reading twice acknowledges nothing
        assert names(client, "human/inbox") == [f"{ident}.json"]
        assert client.stat("human/inbox").mode & 0o777 == 0o700 and client.stat("human/done").mode & 0o777 == 0o500
        fid = client.walk(f"human/inbox/{ident}.json")
        client.rpc(m.Tremove(tag=0, fid=fid))
        assert names(client, "human/inbox") == [] and names(client, "human/done") == [f"{ident}.json"]
        assert message(client, f"human/done/{ident}.json")["subject"] == MSG["subject"]
        assert f"mail:{ident} QUERY_REQUEST from dev to human: where is the config?" in client.read_chunk(events, 0).decode()
        with pytest.raises(ServerError, match="does not exist"):  # acknowledged: the inbox no longer has it
            client.walk(f"human/inbox/{ident}.json")


def test_ids_grow_in_acceptance_order_and_several_writes_make_one_message(srv):
    with srv.connect(dialect=Dialect.P2000U) as client:
        data = json.dumps(MSG | {"body": "x" * 20000}).encode()
        fid = client.open("rev/mail", c.OWRITE)
        offset = 0
        for start in range(0, len(data), 4096):  # as plan9port's 9p write sends it
            offset += client.write_chunk(fid, offset, data[start:start + 4096])
        client.clunk(fid)  # no read-back: the clunk sends it
        ids = [write_mail(client, "dev", json.dumps(MSG | {"subject": f"n{i}"}).encode()).strip() for i in range(5)]
        inbox = names(client, "human/inbox")
        assert len(inbox) == 6 and inbox[1:] == [f"{i}.json" for i in ids] and ids == sorted(ids)
        assert message(client, f"human/inbox/{inbox[0]}")["body"] == "x" * 20000


BAD = [
    (b"not json", errno.EINVAL, "not JSON"),
    (b"[1, 2]", errno.EINVAL, "not an object"),
    (json.dumps(MSG | {"to": "nobody"}).encode(), errno.ENOENT, "'nobody'"),
    (json.dumps(MSG | {"type": "GOSSIP"}).encode(), errno.EINVAL, "GOSSIP"),
    (json.dumps({k: v for k, v in MSG.items() if k != "subject"}).encode(), errno.EINVAL, "subject is missing"),
    (json.dumps(MSG | {"subject": "two\nlines"}).encode(), errno.EINVAL, "one line"),
    (json.dumps(MSG | {"id": "0000000000000001"}).encode(), errno.EINVAL, "server fills"),
    (json.dumps(MSG | {"from": "human"}).encode(), errno.EINVAL, "server fills"),
    (json.dumps(MSG | {"priority": "P0"}).encode(), errno.EINVAL, "priority"),
    (json.dumps(MSG | {"re": "yesterday"}).encode(), errno.EINVAL, "16-digit"),
    (json.dumps(MSG | {"type": "APPROVAL_RESPONSE", "re": "0000000000000001"}).encode(), errno.ENOENT, "no approval request"),
    # only the merge queue sends it (a bead back for rework): a participant's would pose as anvilfs's
    (json.dumps(MSG | {"type": "REWORK_REQUEST"}).encode(), errno.EPERM, "REWORK_REQUEST is sent only by anvilfs"),
    # json.loads recurses once per level: this deep it raised RecursionError (EIO "internal error")
    (b'{"to": ' + b"[" * 5000 + b"]" * 5000 + b"}", errno.EINVAL, "nests arrays and objects far deeper than 32"),
    # parsed, but deeper than any message: refused before pydantic walks it
    (b'{"body": ' + b"[" * 900 + b"]" * 900 + b"}", errno.EINVAL, "nests arrays and objects 901 levels"),
]


@pytest.mark.parametrize("data,code,words", BAD, ids=[w[:40] for _, _, w in BAD])
def test_every_bad_message_is_refused_clearly_and_changes_nothing(srv, data, code, words):
    with srv.connect(dialect=Dialect.P2000U) as client:
        # one Twrite that completes the JSON is checked at that Twrite, with the errno that fits
        fid = client.open("dev/mail", c.ORDWR)
        got_errno, text = refusal(client, m.Twrite(tag=0, fid=fid, offset=0, data=data)) if data.endswith(b"}") else (None, "")
        if got_errno is not None:
            assert got_errno == code and words.split()[0].lower() in (text + client.read_file("errors").decode()).lower(), text
        else:  # not JSON at all: only known when the message ends, so the read-back says why
            client.write_chunk(fid, 0, data)
            answer = client.read_chunk(fid, 0).decode()
            assert answer.startswith("error: ") and words in answer, answer
            assert words in client.read_file("errors").decode()
        client.clunk(fid)
        assert names(client, "human/inbox") == [] and names(client, "human/done") == []
        assert write_mail(client, "dev", json.dumps(MSG).encode()).strip().isdigit()  # and the file still works


def test_oversized_mail_fails_at_the_twrite_that_passes_the_limit(srv):
    with srv.connect(dialect=Dialect.P2000U) as client:
        fid = client.open("dev/mail", c.OWRITE)
        client.write_chunk(fid, 0, b'{"to":"human","type":"QUERY_REQUEST","subject":"big","body":"')
        code, text = refusal(client, m.Twrite(tag=0, fid=fid, offset=61, data=b"x" * 65536))
        assert code == errno.EFBIG and "at most" in client.read_file("errors").decode(), text
        with pytest.raises(ServerError, match="not JSON"):  # what was collected is no message: nothing sent
            client.clunk(fid)
        assert names(client, "human/inbox") == []


def test_a_full_inbox_refuses_the_sender_with_enospc_and_drops_nothing(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[limits]\nmax_inbox = 3\n")
    with anvil_server(trace=False, extra_args=["--config", str(config)]) as server, server.connect(dialect=Dialect.P2000U) as client:
        client.write_file("ctl", b"new sim /tmp name=dev\n")
        sent = [write_mail(client, "dev", json.dumps(MSG | {"subject": f"n{i}"}).encode()).strip() for i in range(3)]
        fid = client.open("dev/mail", c.OWRITE)
        code, _ = refusal(client, m.Twrite(tag=0, fid=fid, offset=0, data=json.dumps(MSG).encode()))
        client.clunk(fid)
        assert code == errno.ENOSPC and "inbox of human is full" in client.read_file("errors").decode()
        assert names(client, "human/inbox") == [f"{i}.json" for i in sent]
        fid = client.walk(f"human/inbox/{sent[0]}.json")
        client.rpc(m.Tremove(tag=0, fid=fid))  # room again
        assert write_mail(client, "dev", json.dumps(MSG).encode()).strip().isdigit()


def test_what_cannot_be_removed_says_so_and_a_stopped_sessions_directory_can(srv):
    with srv.connect(dialect=Dialect.P2000U) as client:
        for path, code in (("list", errno.EPERM), ("human/approvals", errno.EPERM), ("human", errno.EPERM),
                           ("dev/out", errno.EPERM), ("dev", errno.EBUSY)):
            assert refusal(client, m.Tremove(tag=0, fid=client.walk(path)))[0] == code, path
        assert "dev" in names(client, "")
        client.write_file("dev/ctl", b"stop\n")
        events = client.open("events", c.OREAD)
        client.rpc(m.Tremove(tag=0, fid=client.walk("dev")))
        assert "dev" not in names(client, "") and "dev removed" in client.read_chunk(events, 0).decode()
        code, text = refusal(client, m.Twalk(tag=0, fid=client.root, newfid=77, wnames=("dev",)))
        assert code == errno.ENOENT


def test_a_removed_sessions_unread_mail_is_kept_in_the_history(srv):
    with srv.connect(dialect=Dialect.P2000U) as client:
        ident = write_mail(client, "human", json.dumps(MSG | {"to": "dev"}).encode()).strip()
        client.write_file("dev/ctl", b"stop\n")
        events = client.open("events", c.OREAD)
        client.write_file("dev/ctl", b"remove\n")
        [(participant, box, data, removed)] = stored(srv.state, "SELECT participant, box, json, removed FROM mail "
                                                                "WHERE id = ?", (ident,))
        assert (participant, box, json.loads(data)["to"]) == ("dev", "inbox", "dev") and removed
        assert f"mail of dev kept in {srv.state / 'anvilfs.db'} (table mail, participant 'dev', removed '{removed}')" \
            in client.read_chunk(events, 0).decode()
        client.write_file("ctl", b"new sim /tmp name=dev\n")  # a new session of that name starts empty
        assert names(client, "dev/inbox") == []


def test_notify_and_ephemeral_together_are_refused(srv):
    with srv.connect(dialect=Dialect.P2000U) as client:
        fid = client.open("ctl", c.OWRITE)
        code, text = refusal(client, m.Twrite(tag=0, fid=fid, offset=0, data=b"new sim /tmp name=x ephemeral notify\n"))
        assert code == errno.EINVAL and "x" not in names(client, ""), text


def test_twenty_concurrent_senders_to_one_inbox_lose_nothing_and_keep_each_senders_order(srv):
    senders, each = 20, 25
    with srv.connect(dialect=Dialect.P2000U) as client:
        for k in range(senders):
            client.write_file("ctl", f"new sim /tmp name=w{k}\n".encode())
    answered: dict[int, list[str]] = {}
    failures: list[str] = []

    def send_all(k: int) -> None:
        try:
            with srv.connect(uname=f"w{k}", dialect=Dialect.P2000U) as client:
                answered[k] = [write_mail(client, f"w{k}", json.dumps(MSG | {"subject": f"w{k} #{i}"}).encode()).strip()
                               for i in range(each)]
        except Exception as exc:  # reported below: a thread's exception would be lost
            failures.append(f"w{k}: {exc!r}")

    threads = [threading.Thread(target=send_all, args=(k,)) for k in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a sender did not finish in 120 s"
    assert not failures, failures
    with srv.connect(dialect=Dialect.P2000U) as client:
        inbox = names(client, "human/inbox")
        ids = [i for k in range(senders) for i in answered[k]]
        assert len(set(ids)) == senders * each and sorted(f"{i}.json" for i in ids) == inbox
        for k in range(senders):
            assert answered[k] == sorted(answered[k])  # a sender's messages in the order it sent them
            subjects = [message(client, f"human/inbox/{i}.json")["subject"] for i in answered[k]]
            assert subjects == [f"w{k} #{i}" for i in range(each)]


# ------------------------------------------------------------ approvals, end to end with the CLI

RECORDER = """#!/bin/sh
printf '%s|%s|%s\\n' "$1" "$2" "$3" >> "$0.calls"
"""


def wait_for_lines(path: Path, count: int, why: str, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.02)  # another process's progress, bounded by the deadline
    raise AssertionError(f"{why}: {count} calls of the notify command awaited, got {path.read_text() if path.exists() else 'none'}")


@pytest.fixture
def notifier(srv):
    """`anvilfs notify` running a script that records its arguments; yields once it watches `events`."""
    with notifying(srv) as calls:
        yield calls


@contextlib.contextmanager
def notifying(srv):
    """As the notifier fixture, started when the test says."""
    script = Path(tempfile.mkdtemp(prefix="notify.")) / "record"
    script.write_text(RECORDER)
    script.chmod(0o700)
    proc = subprocess.Popen([sys.executable, "-m", "anvilfs", "notify", str(script)], env=srv.env(), cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 20)
        first = proc.stderr.readline().decode() if ready else ""
        assert "watching" in first, f"anvilfs notify did not start within 20 s: {first!r}"
        yield Path(str(script) + ".calls")
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stderr.close()


def cli(srv: AnvilServer, *args: str, input: str = "", env: dict | None = None) -> str:
    result = srv.run_cli(*args, input=input, env=env)
    assert result.returncode == 0, f"anvilfs {' '.join(args)}: {result.stderr}"
    return result.stdout


def test_the_approval_round_trip_through_files_notify_and_the_cli(srv, notifier):
    request = {"to": "human", "type": "APPROVAL_REQUEST", "subject": "OAuth implementation",
               "body": "Implemented OAuth login. All tests pass. Please review and approve."}
    with srv.connect(uname="dev", dialect=Dialect.P2000U) as client:  # the agent, as IDEAS.md has it: 9p write agent/dev/mail
        ident = write_mail(client, "dev", json.dumps(request).encode()).strip()
    assert wait_for_lines(notifier, 1, "the request") == ["dev|APPROVAL_REQUEST|OAuth implementation"]
    assert cli(srv, "read", "agent/human/approvals") == f"{ident} dev - OAuth implementation\n"
    assert cli(srv, "inbox") == f"{ident} dev APPROVAL_REQUEST OAuth implementation\n"
    answer = cli(srv, "approve", ident).strip()
    with srv.connect(dialect=Dialect.P2000U) as client:
        assert names(client, "dev/inbox") == [f"{answer}.json"]
        got = message(client, f"dev/inbox/{answer}.json")
        assert (got["from"], got["type"], got["re"], got["subject"]) == ("human", "APPROVAL_RESPONSE", ident, "approved")
        assert client.read_file("human/approvals") == b""
        again = write_mail(client, "human", json.dumps({"to": "dev", "type": "APPROVAL_RESPONSE", "subject": "approved",
                                                         "body": "", "re": ident}).encode())
        assert again.startswith("error: ") and "no approval request" in again  # answered once, never twice
        assert names(client, "dev/inbox") == [f"{answer}.json"]
    # a query to human is not an approval or review request: notify leaves it (unless --all)
    cli(srv, "mail", "human", "QUERY_REQUEST", "lunch?", input="", env={"ANVILFS_SESSION": "rev"})
    cli(srv, "mail", "human", "REVIEW_REQUEST", "look at PR 7", input="diff attached\n", env={"ANVILFS_SESSION": "rev"})
    assert wait_for_lines(notifier, 2, "the review request")[1] == "rev|REVIEW_REQUEST|look at PR 7"


def test_notify_announces_the_requests_waiting_when_it_starts(srv):
    def request(kind: str, subject: str) -> str:
        with srv.connect(uname="dev", dialect=Dialect.P2000U) as client:
            return write_mail(client, "dev", json.dumps({"to": "human", "type": kind, "subject": subject,
                                                          "body": ""}).encode()).strip()
    answered = request("APPROVAL_REQUEST", "answered before")
    cli(srv, "approve", answered)
    request("APPROVAL_REQUEST", "deploy")
    request("QUERY_REQUEST", "lunch?")  # not a request notify tells of by default
    request("REVIEW_REQUEST", "PR 7")
    with notifying(srv) as calls:
        assert wait_for_lines(calls, 2, "the waiting requests") == [
            "dev|APPROVAL_REQUEST|still waiting: deploy", "dev|REVIEW_REQUEST|still waiting: PR 7"]
        request("REVIEW_REQUEST", "PR 8")  # and then what comes, once
        assert wait_for_lines(calls, 3, "the new request")[2:] == ["dev|REVIEW_REQUEST|PR 8"]


def test_a_bead_that_requires_approval_asks_human_and_its_worker_gets_the_answer(srv, notifier):
    cli(srv, "write", "agent/beads/ctl", 'new "Implement OAuth" developer "Add OAuth" requires_approval=true')
    bead = "impl-oauth-001"
    cli(srv, "write", f"agent/beads/{bead}/ctl", "claim dev")
    cli(srv, "write", f"agent/beads/{bead}/ctl", "complete all tests pass")
    assert cli(srv, "read", f"agent/beads/{bead}/status") == "pending_approval\n"
    calls = wait_for_lines(notifier, 1, "the bead's request")
    assert calls == [f"dev|APPROVAL_REQUEST|approve bead {bead}: Implement OAuth"]
    line = cli(srv, "read", "agent/human/approvals")
    ident = line.split()[0]
    assert line == f"{ident} dev {bead} approve bead {bead}: Implement OAuth\n"
    # the worker cannot approve its own work, through the mail either
    with srv.connect(uname="dev", dialect=Dialect.P2000U) as client:
        own = write_mail(client, "dev", json.dumps({"to": "dev", "type": "APPROVAL_RESPONSE", "subject": "approved",
                                                     "body": "", "re": ident}).encode())
        assert own.startswith("error: ") and "only human answers it" in own
    cli(srv, "reject", bead, "no tests for the callback")
    assert cli(srv, "read", f"agent/beads/{bead}/status") == "in_progress\n"
    assert cli(srv, "read", f"agent/beads/{bead}/review") == "no tests for the callback\n"
    with srv.connect(dialect=Dialect.P2000U) as client:
        [answer] = names(client, "dev/inbox")
        got = message(client, f"dev/inbox/{answer}")
        assert (got["type"], got["re"], got["bead"], got["subject"]) == \
            ("APPROVAL_RESPONSE", ident, bead, "rejected: no tests for the callback")
    cli(srv, "write", f"agent/beads/{bead}/ctl", "complete now with tests")
    wait_for_lines(notifier, 2, "the second request")
    cli(srv, "write", f"agent/beads/{bead}/ctl", "approve")  # on the bead's ctl: the request is answered too
    assert cli(srv, "read", f"agent/beads/{bead}/status") == "completed\n"
    assert cli(srv, "read", "agent/human/approvals") == ""
    with srv.connect(dialect=Dialect.P2000U) as client:
        subjects = sorted(message(client, f"dev/inbox/{n}")["subject"] for n in names(client, "dev/inbox"))
        assert subjects == [f"approved bead {bead}", "rejected: no tests for the callback"]
