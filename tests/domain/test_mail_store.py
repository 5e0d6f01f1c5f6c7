"""Mail in STATE/anvilfs.db, in-process with a real database (the real clock: the writer is a thread).

A read-back that sends a message is answered only once its row is committed; a listing of done/ reads
no message's JSON; an acknowledgement on its way to disk shows the message in done/, not in inbox/; a
row the disk refuses takes the message out of the inbox and answers its sender EIO.
"""

from __future__ import annotations

import errno
import json
import sqlite3
from contextlib import closing
from pathlib import Path

from anvilfs.mail import Draft, MessageType
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from anvilfs.server import Dispatcher
from anvilfs.server.state import Deferred
from anvilfs.waitable import collecting
from harness.deadlines import within
from harness.dispatching import handle


def query(to: str, subject: str) -> Draft:
    return Draft(to=to, type=MessageType.QUERY_REQUEST, subject=subject, body="naïve — body")


def rows(state: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(state / "anvilfs.db")) as db, db:
        return db.execute(sql).fetchall()


def attached(app) -> Dispatcher:
    dispatcher = Dispatcher(app.root, on_error=app.record_error)
    assert isinstance(handle(dispatcher, m.Tversion(tag=c.NOTAG, msize=8192, version="9P2000.u")), m.Rversion)
    assert isinstance(handle(dispatcher, m.Tattach(tag=1, fid=0, afid=c.NOFID, uname="glenda", aname="",
                                                  n_uname=c.NONUNAME)), m.Rattach)
    return dispatcher


def read_back(dispatcher: Dispatcher, draft: dict):
    """Open human/mail, write `draft`, read: the read's reply (it sends the message)."""
    assert isinstance(handle(dispatcher, m.Twalk(tag=2, fid=0, newfid=1, wnames=("human", "mail"))), m.Rwalk)
    assert isinstance(handle(dispatcher, m.Topen(tag=3, fid=1, mode=c.ORDWR)), m.Ropen)
    written = handle(dispatcher, m.Twrite(tag=4, fid=1, offset=0, data=json.dumps(draft).encode()))
    assert isinstance(written, m.Rwrite), written
    return handle(dispatcher, m.Tread(tag=5, fid=1, offset=0, count=100))


async def test_a_read_back_that_sends_is_answered_once_the_row_is_committed(running, tmp_path):
    app = await running(state_dir=tmp_path)
    reply = read_back(attached(app), {"to": "human", "type": "QUERY_REQUEST", "subject": "hi", "body": ""})
    assert isinstance(reply, Deferred), f"answered before its row was committed: {reply}"
    with within(10, "the row's commit"):
        await reply.later.wait()
    [(ident,)] = rows(tmp_path, "SELECT id FROM mail WHERE participant = 'human' AND box = 'inbox'")
    assert [msg.id for msg in app.post.inbox("human")] == [ident]


async def test_a_message_the_disk_refuses_leaves_the_inbox_and_its_sender_gets_eio(running, tmp_path):
    app = await running(state_dir=tmp_path)
    with closing(sqlite3.connect(tmp_path / "anvilfs.db")) as db, db:  # what a full disk does to one row
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON mail BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    reply = read_back(attached(app), {"to": "human", "type": "QUERY_REQUEST", "subject": "lost", "body": ""})
    assert isinstance(reply, Deferred) and [msg.subject for msg in app.post.inbox("human")] == ["lost"]
    with within(10, "the refusal"):
        try:
            await reply.later.wait()
        except Exception as exc:
            refusal = exc
    assert refusal.errno == errno.EIO and "not saved: the disk refused it" in refusal.message, refusal
    assert app.post.inbox("human") == [] and "not saved (" in app.events.text()


async def test_an_ack_on_its_way_to_disk_is_in_done_and_not_in_the_inbox(running, tmp_path):
    app = await running(state_dir=tmp_path)
    post = app.post
    with collecting() as saving:
        sent = post.send("human", query("human", "one"))
        post.ack("human", sent.id)  # queued: the loop has not run since, so it is not settled yet
    assert not any(commit.settled for commit in saving)
    assert post.inbox("human") == [] and post.done_size("human", sent.id) == len(sent.to_json())
    assert post.done_sizes("human") == [(sent.id, len(sent.to_json()))] and post.read_done("human", sent.id) == sent.to_json()
    with within(10, "the ack's commit"):
        for commit in saving:
            await commit.wait()
    assert rows(tmp_path, "SELECT box FROM mail") == [("done",)]
    assert post.done_sizes("human") == [(sent.id, len(sent.to_json()))] and post.read_done("human", sent.id) == sent.to_json()


async def test_a_done_listing_reads_no_message(running, tmp_path):
    app = await running(state_dir=tmp_path)
    with collecting() as saving:  # as a request does: the changes to wait for
        sent = [app.post.send("human", query("human", f"café {i}")) for i in range(5)]
        for msg in sent:
            app.post.ack("human", msg.id)
    with within(10, "the commits"):
        for commit in saving:
            await commit.wait()
    statements: list[str] = []
    app.db._reader.set_trace_callback(statements.append)  # every statement the server's reads run
    done = app.root.lookup("human").lookup("done")
    lengths = {entry.name: entry.size() for entry in done.children()}
    assert lengths == {f"{msg.id}.json": len(msg.to_json()) for msg in sent}
    assert statements and not [s for s in statements if fetches_json(s)], statements
    assert done.lookup(f"{sent[0].id}.json").render() == sent[0].to_json().decode()
    assert [s for s in statements if fetches_json(s)], "the trace saw no read at all: its silence proves nothing"


def fetches_json(statement: str) -> bool:
    """Whether a SELECT takes a message's JSON (its length() reads none of it: SQLite's length of a BLOB)."""
    selected = statement.partition(" FROM ")[0]
    return statement.lstrip().upper().startswith("SELECT") and "json" in selected.replace("length(json)", "")


async def test_an_answer_the_disk_refuses_leaves_the_request_waiting_and_unanswered(running, tmp_path):
    app = await running(state_dir=tmp_path)
    request = app.post.send("human", Draft(to="human", type=MessageType.APPROVAL_REQUEST, subject="deploy?"))
    app.db.flush(10)
    with closing(sqlite3.connect(tmp_path / "anvilfs.db")) as db, db:  # the disk refuses the answer's transaction
        db.execute("CREATE TRIGGER refuse BEFORE DELETE ON approvals BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    with collecting() as saving:
        app.post.send("human", Draft(to="human", type=MessageType.APPROVAL_RESPONSE, subject="approved", re=request.id))
    assert app.post.approvals.waiting() == []  # answered, as far as the loop knows until the commit settles
    with within(10, "the refusal"):
        for commit in saving:
            try:
                await commit.wait()
            except OSError:
                pass
    assert app.post.approvals.waiting() == [request]  # it waits on disk: so it does here, answerable again
    assert [m.type for m in app.post.inbox("human")] == [MessageType.APPROVAL_REQUEST]  # the answer is not there
    assert rows(tmp_path, "SELECT count(*) FROM mail") == [(1,)]
