"""Mail an earlier anvilfs kept as files comes up whole after the upgrade, once, and a crash in the import
leaves it importable again.

The files are written as main at 0dec9af wrote them (tests/harness/old_mail.py, checked byte for byte
against that code's MailFiles): every kind it kept, crash windows of that code included; and one state
is made by that commit's own server, run from `git archive`. The crashes are the server's own SIGKILL
at the exact point (ANVILFS_TEST_KILL_AT, anvilfs/faults.py).
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from anvilfs.app import App
from anvilfs.faults import ENV
from anvilfs.mail import Message, MessageType
from anvilfs.ninep import consts as c
from harness.apps import started
from harness.mailbox import stored
from harness.old_mail import OLD_COMMIT, OldMailFiles, message, old_code, old_server
from harness.server import start_server

APPROVAL_REQUEST, APPROVAL_RESPONSE = MessageType.APPROVAL_REQUEST, MessageType.APPROVAL_RESPONSE
DAMAGED_DONE = b'{"id": "0000000000000009", "body": "caf\xe9"}\n'  # not UTF-8: read as "?", as long as stored


@dataclass
class OldState:
    unread: Message  # human -> dev, in dev's inbox
    acked: Message  # dev -> human, in human's done/
    waiting: Message  # dev's request to human, delivered
    undelivered: Message  # human's request to dev, recorded but not delivered (the server stopped in between)
    answered: tuple[Message, Message]  # dev answered human's request; the answer recorded, not delivered
    kept: tuple[Message, Message]  # anvilfs's request, answered; no inbox took the answer
    older: Message  # a request kept where they were before STATE/approvals/ (mail/approvals/)
    retired: Message  # in the inbox of a session `gone`, removed


def old_state(state: Path) -> OldState:
    old = OldMailFiles(state)
    s = OldState(
        unread=message(101, "human", "dev", "are you there?", body="naïve ☕"),
        acked=message(102, "dev", "human", "café done"),
        waiting=message(103, "dev", "human", "deploy", APPROVAL_REQUEST),
        undelivered=message(104, "human", "dev", "may I?", APPROVAL_REQUEST),
        answered=(message(105, "human", "dev", "merge?", APPROVAL_REQUEST),
                  message(106, "dev", "human", "approved", APPROVAL_RESPONSE, re=f"{105:016d}")),
        kept=(message(107, "anvilfs", "human", "approve bead b-1: x", APPROVAL_REQUEST, bead="b-1"),
              message(108, "human", "anvilfs", "approved bead b-1", APPROVAL_RESPONSE, re=f"{107:016d}", bead="b-1")),
        older=message(110, "dev", "human", "older", APPROVAL_REQUEST),
        retired=message(111, "human", "gone", "bye"))
    old.deliver(s.unread)
    old.deliver(s.acked)
    old.ack("human", s.acked.id)
    old.put_raw("human", "done", "0000000000000009.json", DAMAGED_DONE)
    old.put_raw("human", "inbox", "0000000000000099.json", b"{not json")
    for request in (s.waiting, s.undelivered, s.answered[0], s.kept[0]):
        old.wait_for_answer(request)
        if request is not s.undelivered:
            old.deliver(request)
    old.wait_for_answer(*s.answered)
    old.wait_for_answer(*s.kept)
    old.answered(s.kept[0].id, keep=True)
    old.wait_for_answer(s.older, where="mail/approvals")
    old.deliver(s.older)
    old.deliver(s.retired)
    old.retire("gone")
    return s


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def check_all_there(app: App, state: Path, s: OldState) -> None:
    post = app.post
    assert ids(post.inbox("dev")) == [s.unread.id, s.undelivered.id, s.answered[0].id]  # the undelivered delivered
    assert post.inbox("dev")[0].to_json() == s.unread.to_json()
    assert ids(post.inbox("human")) == [s.waiting.id, s.answered[1].id, s.kept[0].id, s.older.id]  # the answer too
    assert post.done_sizes("human") == [("0000000000000009", len(DAMAGED_DONE)), (s.acked.id, len(s.acked.to_json()))]
    assert post.read_done("human", s.acked.id) == s.acked.to_json()
    assert post.read_done("human", "0000000000000009") == DAMAGED_DONE  # as it was on disk, byte for byte
    assert ids(post.approvals.waiting()) == [s.waiting.id, s.undelivered.id, s.older.id]
    assert post.store.kept() == {s.kept[0].id: s.kept}
    assert post.inbox("gone") == [] and post.ids.last >= 111
    assert stored(state, "SELECT id, participant, box FROM mail WHERE removed IS NOT NULL") == [
        (s.retired.id, "gone", "inbox")]


async def test_a_state_of_the_old_layout_comes_up_whole_and_is_imported_once(tmp_path):
    s = old_state(tmp_path)
    async with started(tmp_path) as app:
        check_all_there(app, tmp_path, s)
        assert "message 0000000000000099 in the inbox of human cannot be read" in app.errors.text()
        assert [line for line in app.events.text().splitlines() if "imported into" in line]
    assert not [p for p in ("mail", "approvals", "removed/gone.2026-12-05T110000Z.mail") if (tmp_path / p).exists()]
    [moved] = (tmp_path / "imported").iterdir()
    assert (moved / "mail" / "dev" / "inbox" / f"{s.unread.id}.json").read_bytes() == s.unread.to_json()
    assert (moved / "removed" / "gone.2026-12-05T110000Z.mail" / "inbox").is_dir()
    async with started(tmp_path) as again:  # the same state, nothing imported twice, nothing answered twice
        check_all_there(again, tmp_path, s)
        assert not [line for line in again.events.text().splitlines() if "imported into" in line]


# ------------------------------------------------------------ crashes in the middle of the import


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvi."))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def human_inbox(srv) -> list[str]:
    with srv.connect() as client:
        return [json.loads(client.read_file(f"human/inbox/{e.name}"))["subject"] for e in client.list_dir("human/inbox")]


@pytest.mark.parametrize("point", ["mail-import", "mail-import-move"])
def test_a_server_killed_in_the_import_imports_it_at_the_next_start_once(base, point):
    s = old_state(base / "state")
    with pytest.raises(RuntimeError, match="exited with -9 before listening"):
        start_server(base, trace=False, env={ENV: point})
    rows = stored(base / "state", "SELECT count(*) FROM mail")
    if point == "mail-import":  # killed before the commit: nothing in the database, every file where it was
        assert rows == [(0,)] and (base / "state" / "mail").is_dir() and (base / "state" / "approvals").is_dir()
    else:  # committed; one directory moved away, the others still there
        assert rows != [(0,)] and len(list((base / "state" / "imported").glob("*/*"))) == 1
        assert (base / "state" / "approvals").is_dir()
    srv = start_server(base, trace=False)
    try:
        assert human_inbox(srv) == ["deploy", "approved", "approve bead b-1: x", "older"]  # each once
        assert [line.split()[0] for line in srv.run_cli("read", "agent/human/approvals").stdout.splitlines()] == [
            s.waiting.id, s.older.id]  # to human; the third waits for dev (no session here)
        assert not [p for p in ("mail", "approvals", "removed/gone.2026-12-05T110000Z.mail")
                    if (base / "state" / p).exists()]
    finally:
        srv.stop()


# ------------------------------------------------------------ a state made by the server of before


def send(client, sender: str, draft: dict) -> str:
    fid = client.open(f"{sender}/mail", c.ORDWR)
    client.write_all(fid, json.dumps(draft).encode())
    answer = client.read_chunk(fid, 0).decode().strip()
    client.clunk(fid)
    assert answer.isdigit(), answer
    return answer


def test_a_state_made_by_the_server_of_before_comes_up_whole(base, tmp_path):
    code = old_code(tmp_path)
    if code is None:
        pytest.skip(f"this checkout has no commit {OLD_COMMIT} to run the server of before")
    old = old_server(code, base)
    try:
        with old.connect() as client:
            for name in ("dev", "lead"):
                client.write_file("ctl", f"new sim /tmp name={name}\n".encode())
            query = {"to": "dev", "type": "QUERY_REQUEST", "body": "café ☕"}
            first, *unread = [send(client, "human", query | {"subject": f"q{i}"}) for i in range(3)]
            client.remove(f"dev/inbox/{first}.json")
            request = send(client, "dev", {"to": "human", "type": "APPROVAL_REQUEST", "subject": "deploy", "body": ""})
            asked = send(client, "lead", {"to": "human", "type": "APPROVAL_REQUEST", "subject": "merge", "body": ""})
            send(client, "human", {"to": "lead", "type": "APPROVAL_RESPONSE", "subject": "ok", "body": "", "re": asked})
            client.write_file("lead/ctl", b"stop\n")
            client.write_file("lead/ctl", b"remove\n")
            done_bytes = client.read_file(f"dev/done/{first}.json")
    finally:
        old.stop(sig=signal.SIGKILL)
    assert (base / "state" / "mail" / "dev" / "done" / f"{first}.json").exists()  # the old layout indeed
    for start in range(2):  # the import, then a start with nothing to import
        srv = start_server(base, trace=False)
        try:
            with srv.connect() as client:
                assert [e.name for e in client.list_dir("dev/inbox")] == [f"{i}.json" for i in unread]
                [done] = client.list_dir("dev/done")
                assert done.length == len(done_bytes) and client.read_file(f"dev/done/{first}.json") == done_bytes
                assert [e.name for e in client.list_dir("human/inbox")] == [f"{request}.json", f"{asked}.json"]
            assert [line.split()[0] for line in srv.run_cli("read", "agent/human/approvals").stdout.splitlines()] == [
                request]
            assert stored(base / "state", "SELECT participant, count(*) FROM mail WHERE removed IS NOT NULL") == [
                ("lead", 1)]  # the answer lead had when it was removed, kept as history
        finally:
            srv.stop()
    assert not (base / "state" / "mail").exists()
