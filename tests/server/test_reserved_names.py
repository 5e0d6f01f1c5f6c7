"""Names the server keeps for files of its own beside the sessions (`merges`, `worktrees`, `usage`, and
the root's files): refused for new sessions, and a session an older anvilfs saved under one of them is
renamed when a real ``anvilfs serve`` restores it, for good, with everything it had."""

from __future__ import annotations

import errno
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from anvilfs.beads import Who
from anvilfs.mail import Draft, MessageType
from anvilfs.ninep import Dialect
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from anvilfs.sessions import SERVER_NAMES, RestartPolicy, State
from harness.apps import started, until
from harness.cli_runs import list_rows, ok
from harness.server import AnvilServer, start_server


@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="anvr.", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def _as_an_older_server_left_it(state: Path, cwd: Path) -> str:
    """A session `merges` with a transcript, an inbox, an acknowledged message, a bead it holds and a private
    directory, made by this code with the names reserved since taken out (as an older anvilfs had them)."""
    async with started(state, restart=RestartPolicy(enabled=False)) as app:
        app.sessions.reserved -= SERVER_NAMES
        session = app.sessions.new("sim", str(cwd), name="merges")
        await app.sessions.submit("merges", "a prompt before the rename", "glenda").wait()
        await until(lambda: session.state is State.AWAIT and not session.busy)
        kept = app.post.send("human", Draft(to="merges", type=MessageType.QUERY_REQUEST, subject="still waiting"))
        done = app.post.send("human", Draft(to="merges", type=MessageType.QUERY_REQUEST, subject="read already"))
        app.post.ack("merges", done.id)
        bead = app.board.new("Work of merges", "dev", "held across the rename")
        app.board.claim(bead.id, Who("merges", "merges"))
        home = Path(app.sessions.agent_home("merges"))
        home.mkdir(mode=0o700)
        (home / "conversation").write_text("the CLI's own files\n")
        return f"{kept.id} {done.id} {bead.id}"  # the server's clean stop commits everything queued


def _refused_errno(srv: AnvilServer, line: str) -> int:
    with srv.connect(dialect=Dialect.P2000U) as client:
        fid = client.open("ctl", c.OWRITE)
        reply = client.exchange(m.Twrite(tag=0, fid=fid, offset=0, data=line.encode()))
        assert isinstance(reply, m.Rerror), reply
        assert "is reserved for a file beside the sessions" in reply.ename, reply.ename
        return reply.errno


def test_a_restored_session_under_a_reserved_name_is_renamed_with_all_it_had(base: Path) -> None:
    state, cwd = base / "state", base / "work"
    cwd.mkdir()
    kept, done, bead = trio.run(_as_an_older_server_left_it, state, cwd).split()

    srv = start_server(base, state=state)
    try:
        rows = list_rows(srv)
        assert "merges" not in rows and rows["merges-1"][:2] == ["merges-1", "sim"], rows
        log = ok(srv, "read", "agent/merges-1/log")  # `events` has only its readers of the moment: none yet
        assert "a prompt before the rename" in log
        assert re.search(r"^--- renamed at \S+ from merges to merges-1: the name merges is reserved now", log, re.M), log
        assert ok(srv, "read", "agent/merges-1/out").startswith("[simulated] merges, turn 1")
        assert ok(srv, "ls", "agent/merges-1/inbox").split() == [f"{kept}.json"]
        assert ok(srv, "ls", "agent/merges-1/done").split() == [f"{done}.json"]
        assert "still waiting" in ok(srv, "read", f"agent/merges-1/inbox/{kept}.json")
        assert ok(srv, "read", f"agent/beads/{bead}/assigned_to") == "merges-1\n"
        assert not (state / "agents" / "merges").exists()
        assert (state / "agents" / "merges-1" / "conversation").read_text() == "the CLI's own files\n"
        # it goes on under its new name
        ok(srv, "write", "agent/merges-1/in", input="a prompt after it\n")
        assert ok(srv, "read", "agent/merges-1/wait").split() == ["await"]
        assert ok(srv, "read", "agent/merges-1/out").startswith("[simulated] merges-1, turn ")  # its new name
    finally:
        assert srv.stop() == 0, srv.trace_tail()

    srv = start_server(base, state=state, log_name="again.trace")  # the rename was for good
    try:
        assert set(list_rows(srv)) == {"merges-1"}
        assert ok(srv, "read", "agent/merges-1/log").count("--- renamed at ") == 1
        assert "a prompt after it" in ok(srv, "read", "agent/merges-1/log")
        assert ok(srv, "ls", "agent/merges-1/inbox").split() == [f"{kept}.json"]
    finally:
        srv.stop()


@pytest.mark.parametrize("name", sorted(SERVER_NAMES))
def test_a_new_session_cannot_take_a_name_the_server_keeps(anvil_server: AnvilServer, name: str) -> None:
    # the errno of the root's own names (`new ... name=ctl`): EEXIST, as if a file of that name were there
    assert _refused_errno(anvil_server, "new sim /tmp name=ctl\n") == errno.EEXIST
    assert _refused_errno(anvil_server, f"new sim /tmp name={name}\n") == errno.EEXIST
    assert list_rows(anvil_server) == {}
