"""External sessions through a real `anvilfs serve`: the owner (a conductor) is the agent (SPEC §5).

Each test drives the server over its unix socket with the project's light
client (several connections: the owner's, another conductor's, an `events`
reader) or the `anvilfs` command. A read that must block is shown to block
without timing: its Tread goes out, then a second request on the same
connection; the server answers requests in order and sets only the blocked
read aside, so the second's reply coming first proves the first is waiting.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from anvilfs.client import Client, ServerError
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from harness.server import AnvilServer, start_server

TIMEOUT = 20  # seconds: every socket read fails after it instead of hanging the test


def read(client: Client, path: str) -> str:
    return client.read_file(path).decode()


def write(client: Client, path: str, text: str) -> None:
    client.write_file(path, text.encode())


def start_blocked_read(client: Client, path: str) -> int:
    """Send a Tread of `path` and show that it blocks; its tag, for `blocked_reply`."""
    fid = client.open(path, c.OREAD)
    tag = client.send(m.Tread(tag=0, fid=fid, offset=0, count=8192))
    probe = client.send(m.Twalk(tag=0, fid=client.root, newfid=client.new_fid(), wnames=()))
    first = client.receive()
    assert (type(first), first.tag) == (m.Rwalk, probe), f"the read of {path} did not block: {first}"
    return tag


def blocked_reply(client: Client, tag: int) -> bytes:
    reply = client.receive()
    assert (type(reply), reply.tag) == (m.Rread, tag), reply
    return reply.data


class Events:
    """An `events` reader opened before the test acts, so it sees every line from then on."""

    def __init__(self, srv: AnvilServer):
        self.client = srv.connect("watcher", timeout=TIMEOUT)
        self.fid = self.client.open("events", c.OREAD)
        self.seen = ""

    def until(self, text: str) -> str:
        deadline = time.monotonic() + TIMEOUT
        while text not in self.seen:  # each read blocks until lines come (the socket timeout bounds it)
            assert time.monotonic() < deadline, f"no {text!r} in events:\n{self.seen}"
            self.seen += self.client.read_chunk(self.fid, 0).decode()
        return self.seen


def new_conductor(client: Client, name: str = "review1") -> None:
    write(client, "ctl", f"new external /tmp name={name} role=conductor")


def test_an_external_session_starts_nothing_and_shows_its_owners_progress(anvil_server):
    srv = anvil_server
    events = Events(srv)
    with srv.connect("cond", timeout=TIMEOUT) as owner:
        new_conductor(owner)
        assert "external external ready\n" in read(owner, "backends")
        assert (read(owner, "review1/status"), read(owner, "review1/pid")) == ("idle\n", "")
        assert "review1 external idle conductor /tmp\n" in read(owner, "list")
        write(owner, "review1/status", "running workflow=review step=fix round=1\n")
        assert read(owner, "review1/status") == "running workflow=review step=fix round=1\n"
        assert "review1 external running conductor /tmp\n" in read(owner, "list")  # list has the state word only
        write(owner, "review1/status", "running workflow=review step=fix round=2\n")
        assert read(owner, "review1/status") == "running workflow=review step=fix round=2\n"
        seen = events.until(" review1 running workflow=review step=fix round=2\n")
        assert " review1 running workflow=review step=fix round=1\n" in seen
        assert "--- begun 1 by cond at " in read(owner, "review1/log")
        with pytest.raises(ServerError, match="clear works between turns of a started session: review1 is running"):
            write(owner, "review1/ctl", "clear")  # as for any session
        with pytest.raises(ServerError, match="control characters"):
            write(owner, "review1/status", "running a\x01b\n")
    refused = srv.run_cli("write", "agent/review1/status", "idle")
    assert refused.returncode == 1 and "write running|await|error" in refused.stderr, refused.stderr


def test_the_owners_out_is_the_turns_answer_read_back_and_in_the_log(anvil_server):
    srv = anvil_server
    with srv.connect("cond", timeout=TIMEOUT) as owner:
        new_conductor(owner)
        with pytest.raises(ServerError, match="begin a turn first"):
            write(owner, "review1/out", "too early\n")
        write(owner, "review1/status", "running workflow=review round=2\n")
        fid = owner.open("review1/out", c.OWRITE)
        owner.write_chunk(fid, 0, b"no issues left\n")  # one open, two writes: one answer, at the close
        owner.write_chunk(fid, 15, b"after round 2\n")
        assert read(owner, "review1/status").startswith("running")
        owner.clunk(fid)
        assert read(owner, "review1/status") == "await\n"
        assert read(owner, "review1/out") == "no issues left\nafter round 2\n"
        log = read(owner, "review1/log")
        assert "--- answer 1 at " in log and log.endswith("no issues left\nafter round 2\n"), log
        assert srv.run_cli("read", "agent/review1/out").stdout == "no issues left\nafter round 2\n"
        with pytest.raises(ServerError, match="begin a turn first"):
            write(owner, "review1/out", "a second answer\n")


def test_wait_blocks_while_the_owner_works_and_then_answers_await(anvil_server):
    srv = anvil_server
    with srv.connect("cond", timeout=TIMEOUT) as owner, srv.connect("outer", timeout=TIMEOUT) as other:
        new_conductor(owner)
        write(owner, "review1/status", "running round=1\n")
        parked = start_blocked_read(other, "review1/wait")  # another conductor waits on this one
        write(owner, "review1/status", "running round=2\n")  # progress is not the end of the turn
        write(owner, "review1/out", "done\n")
        assert blocked_reply(other, parked) == b"await\n"


def test_a_prompt_is_taken_by_the_owner_from_next_and_answered(anvil_server):
    srv = anvil_server
    with srv.connect("cond", timeout=TIMEOUT) as owner, srv.connect("glenda", timeout=TIMEOUT) as other:
        new_conductor(owner)
        parked = start_blocked_read(owner, "review1/next")  # nothing queued yet
        write(other, "review1/in", "review parser.py\n")
        assert blocked_reply(owner, parked) == b"review parser.py\n"
        assert (read(other, "review1/status"), read(other, "review1/queue")) == ("running\n", "")
        assert "--- prompt 1 from glenda at " in read(other, "review1/log")
        assert read(owner, "review1/next") == "review parser.py\n"  # the same, until the turn ends
        parked = start_blocked_read(other, "review1/wait")
        write(owner, "review1/out", "parser.py: 2 issues\n")
        assert blocked_reply(other, parked) == b"await\n"
        assert read(other, "review1/out") == "parser.py: 2 issues\n"


def test_a_stop_from_another_connection_is_seen_by_the_owner(anvil_server):
    srv = anvil_server
    events = Events(srv)
    with srv.connect("cond", timeout=TIMEOUT) as owner, srv.connect("glenda", timeout=TIMEOUT) as other:
        new_conductor(owner)
        write(owner, "review1/status", "running round=1\n")
        parked = start_blocked_read(owner, "review1/next")  # its own turn runs: no prompt to give
        write(other, "review1/ctl", "stop")
        assert blocked_reply(owner, parked) == b""  # end of file: the session ended
        assert read(owner, "review1/status") == "stopped\n"
        events.until(" review1 stopped\n")
        with pytest.raises(ServerError, match="status running: a session that is stopped cannot take turn-began"):
            write(owner, "review1/status", "running round=2\n")
        write(other, "review1/ctl", "restart")
        assert read(owner, "review1/status") == "idle\n"  # not starting: its owner may go on at once
        write(owner, "review1/status", "running round=2\n")
        answer = owner.open("review1/out", c.OWRITE)
        owner.write_chunk(answer, 0, b"round 2: done\n")
        write(other, "review1/ctl", "interrupt")  # while the owner is writing its answer
        events.until(" review1 await interrupted\n")
        assert read(owner, "review1/status") == "await interrupted\n"
        with pytest.raises(ServerError, match="begin a turn first"):
            owner.clunk(answer)  # too late for the turn it was for: refused, and said in events
        events.until("review1 is await interrupted")
        assert read(owner, "review1/out") == ""


def test_the_out_of_another_kind_of_session_is_refused(anvil_server):
    srv = anvil_server
    with srv.connect("glenda", timeout=TIMEOUT) as client:
        write(client, "ctl", "new sim /tmp name=bot1")
        with pytest.raises(ServerError, match=r"out is read-only \(mode 0400\)"):
            write(client, "bot1/out", "an answer\n")
        with pytest.raises(ServerError, match="only hook-driven .tmux. agents and external owners write it"):
            write(client, "bot1/status", "running\n")
        assert "next" not in [entry.name for entry in client.list_dir("bot1")]
    refused = srv.run_cli("write", "agent/bot1/out", input="x\n")
    assert refused.returncode == 1 and "out is read-only" in refused.stderr, refused.stderr


@pytest.fixture
def place():
    base = Path(tempfile.mkdtemp(prefix="anvx."))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_an_external_session_survives_a_server_sigkill_as_it_was(place):
    """No process to lose: after kill -9 and a new server, the status, out, log and the taken prompt are there."""
    srv = start_server(place, log_name="first.trace")
    try:
        with srv.connect("cond", timeout=TIMEOUT) as owner, srv.connect("glenda", timeout=TIMEOUT) as other:
            new_conductor(owner)
            new_conductor(owner, "idle1")
            write(owner, "review1/status", "running round=1\n")
            write(owner, "review1/out", "round 1: 3 issues\n")
            write(other, "review1/in", "now round 2\n")
            assert read(owner, "review1/next") == "now round 2\n"
            write(owner, "review1/status", "running workflow=review step=fix round=2\n")
    finally:
        assert srv.stop(sig=signal.SIGKILL) == -signal.SIGKILL
    again = start_server(place, namespace=srv.namespace, state=srv.state, log_name="second.trace")
    try:
        with again.connect("cond", timeout=TIMEOUT) as owner:
            assert read(owner, "review1/status") == "running workflow=review step=fix round=2\n"
            assert read(owner, "idle1/status") == "idle\n"
            assert read(owner, "review1/out") == "round 1: 3 issues\n"
            log = read(owner, "review1/log")
            for record in ("--- begun 1 by cond at ", "--- answer 1 at ", "--- prompt 2 from glenda at "):
                assert record in log, log
            assert read(owner, "review1/next") == "now round 2\n"  # the owner restarts and finds its prompt
            write(owner, "review1/out", "round 2: none\n")
            assert (read(owner, "review1/status"), read(owner, "review1/out")) == ("await\n", "round 2: none\n")
            assert "exited" not in read(owner, "list")
    finally:
        again.stop()


def test_an_answer_begun_in_one_turn_is_not_taken_for_the_next(anvil_server):
    """Found in review: the turn ended (interrupted) and another began before the answer's clunk."""
    srv = anvil_server
    events = Events(srv)
    with srv.connect("cond", timeout=TIMEOUT) as owner, srv.connect("glenda", timeout=TIMEOUT) as other:
        new_conductor(owner)
        write(other, "review1/in", "prompt one\n")
        write(other, "review1/in", "prompt two\n")
        assert read(owner, "review1/next") == "prompt one\n"  # turn 1 begins
        answer = owner.open("review1/out", c.OWRITE)
        owner.write_chunk(answer, 0, b"the answer to prompt one\n")
        write(other, "review1/ctl", "interrupt")  # turn 1 ends
        events.until(" review1 await interrupted\n")
        assert read(owner, "review1/next") == "prompt two\n"  # turn 2 begins
        with pytest.raises(ServerError, match="begun in turn 1, which has ended"):
            owner.clunk(answer)
        assert "the answer to prompt one" not in read(owner, "review1/log")
        assert read(owner, "review1/status").startswith("running")  # turn 2 is still the owner's to answer
        write(owner, "review1/out", "the answer to prompt two\n")
        assert read(owner, "review1/out") == "the answer to prompt two\n"
