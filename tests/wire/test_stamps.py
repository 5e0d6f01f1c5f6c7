"""Files whose content changes say so: qid.version and mtime move (issue 10 item 6).

Through the project's client against a real server (Tstat in 9P2000), and
in-process through the dispatcher for the exact mtime (Tstat and Tgetattr),
with the session module's clock set by the test: a second cannot pass
without sleeping.
"""

from __future__ import annotations

import time

import anvilfs.beads.board as board_module
import anvilfs.beads.collection as collection_module
import anvilfs.sessions.session as session_module
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from anvilfs.server import Dispatcher
from harness.apps import until
from harness.cli_runs import stamp
from harness.dispatching import handle
from harness.server import AnvilServer

CHANGING = ["status", "out", "log", "queue"]
def ok(srv: AnvilServer, *args: str) -> str:
    r = srv.run_cli(*args)
    assert r.returncode == 0, f"{args} -> {r.returncode}: {r.stderr}"
    return r.stdout


def test_a_prompt_moves_the_sessions_files_and_not_the_fixed_ones(anvil_server: AnvilServer):
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    assert ok(srv, "read", "agent/bot1/wait") == "idle\n"
    before = {name: stamp(srv, f"bot1/{name}") for name in [*CHANGING, "cwd", "ctl"]}
    directory = stamp(srv, "bot1")
    t0 = int(time.time())
    ok(srv, "write", "agent/bot1/in", "hello")
    assert ok(srv, "read", "agent/bot1/wait") == "await\n"
    for name in CHANGING:
        version, mtime = stamp(srv, f"bot1/{name}")
        assert version > before[name][0], (name, before[name], version)
        assert mtime >= t0, (name, mtime, t0)
    for name in ["cwd", "ctl"]:  # their content never changes
        assert stamp(srv, f"bot1/{name}") == before[name], name
    assert stamp(srv, "bot1") == directory  # its entries did not change


def test_a_claim_moves_the_beads_files(anvil_server: AnvilServer):
    srv = anvil_server
    ok(srv, "write", "agent/beads/ctl", "new 'Write docs' writer 'The README'")
    before = stamp(srv, "beads/write-docs-001/status")
    ok(srv, "write", "agent/beads/write-docs-001/ctl", "claim worker lease=600")
    after = stamp(srv, "beads/write-docs-001/status")
    assert after[0] != before[0] and after[1] >= before[1], (before, after)
    assert ok(srv, "read", "agent/beads/write-docs-001/status") == "in_progress\n"


class Clock:
    """The session module's clock, set by the test."""

    def __init__(self, now: int):
        self.now = now

    def time(self) -> float:
        return float(self.now)


def _attach(dispatcher: Dispatcher, dialect: str) -> None:
    assert isinstance(handle(dispatcher, m.Tversion(tag=c.NOTAG, msize=8192, version=dialect)), m.Rversion)
    assert isinstance(handle(dispatcher, m.Tattach(tag=1, fid=0, afid=c.NOFID, uname="glenda", aname="",
                                                  n_uname=c.NONUNAME)), m.Rattach)


async def test_mtime_is_the_time_of_the_last_change_in_stat_and_getattr(autojump_clock, running, monkeypatch):
    clock = Clock(1_000_000_000)
    monkeypatch.setattr(session_module, "time", clock)
    app = await running()
    session = app.sessions.new("sim", "/tmp", name="bot1")
    await until(lambda: not session.busy)
    clock.now += 3600
    app.sessions.submit("bot1", "hello", "glenda")
    await until(lambda: not session.busy)
    clock.now += 3600  # nothing changes from here on: the mtime stays the turn's
    for dialect in ("9P2000", "9P2000.L"):
        dispatcher = Dispatcher(app.root, on_error=app.record_error)
        _attach(dispatcher, dialect)
        assert isinstance(handle(dispatcher, m.Twalk(tag=2, fid=0, newfid=1, wnames=("bot1", "out"))), m.Rwalk)
        if dialect == "9P2000":
            stat = handle(dispatcher, m.Tstat(tag=3, fid=1)).stat
            assert (stat.mtime, stat.qid.version) == (1_000_003_600, session.stamp()[0]), stat
        else:
            reply = handle(dispatcher, m.Tgetattr(tag=3, fid=1, request_mask=c.GETATTR_BASIC))
            assert (reply.mtime_sec, reply.qid.version) == (1_000_003_600, session.stamp()[0]), reply


async def test_a_beads_mtime_is_its_updated_time(running, monkeypatch):
    for module in (board_module, collection_module):  # the bead's clock, set (created, and updated at each save)
        monkeypatch.setattr(module, "timestamp", lambda: "2001-09-09T01:46:40Z")
    app = await running()
    bead = app.board.new("Write docs", "writer", "The README")
    dispatcher = Dispatcher(app.root, on_error=app.record_error)
    _attach(dispatcher, "9P2000")
    assert isinstance(handle(dispatcher, m.Twalk(tag=2, fid=0, newfid=1, wnames=("beads", bead.id, "title"))), m.Rwalk)
    stat = handle(dispatcher, m.Tstat(tag=3, fid=1)).stat
    assert stat.mtime == 1_000_000_000, stat
