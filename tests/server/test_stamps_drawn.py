"""The files drawn from the domain move (qid.version, mtime) when what they show changes, and only then.

`list`, `events`, `errors`, `backends`, `roles`, `human/approvals`, the beads' lists (`list`, `ready`,
`ready.<role>`, `graph`), a bead's fields and a convoy's files. Each step below changes one thing and
names the files it must move: every other file watched must keep its stamp, version and mtime. Many
steps change the domain without changing what a watched file shows (a bead's lease renewed, another
bead's description): a stamp that moved with the domain's counter, not with the text, fails there.
Through `anvilfs stat` against a real server, as test_stamps_moving.py.

A session's `queue` also lists the prompts on their way to disk, which no 9P client can hold there:
that one is in-process, through the dispatcher, with the prompt's save not yet run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from anvilfs.server import Dispatcher
from harness.apps import until
from harness.cli_runs import fails, ok, stamp
from harness.dispatching import handle
from harness.server import AnvilServer, anvil_server
from test_stamps_moving import created


class Watch:
    """The stamps of some files (paths under agent/), taken again after each change to say which moved."""

    def __init__(self, srv: AnvilServer, *paths: str):
        self.srv, self.paths = srv, paths
        self.last = self._take()

    def _take(self) -> dict[str, tuple[int, int]]:
        return {path: stamp(self.srv, path) for path in self.paths}

    def moved(self, *command: str, check: bool = True, then=lambda: None) -> set[str]:
        """Run `anvilfs COMMAND` (that must succeed, unless check is off) and `then` (what waits for the
        change to be over), and say which files' stamps moved."""
        t0 = int(time.time())
        if check:
            ok(self.srv, *command)
        else:
            fails(self.srv, *command)
        then()
        now = self._take()
        moved = {path for path in self.paths if now[path] != self.last[path]}
        for path in moved:  # a move is of the version, and the mtime is the change's second, not older
            (version, _), (new_version, new_mtime) = self.last[path], now[path]
            assert new_version != version and new_mtime >= t0, (path, self.last[path], now[path], t0)
        self.last = now
        return moved


def test_the_beads_and_convoys_files_move_with_what_they_show(anvil_server: AnvilServer):
    srv = anvil_server
    convoy = created(srv, "convoys/ctl", "new Auth 'Add OAuth'")
    a = created(srv, "beads/ctl", f"new 'Implement OAuth' dev 'Use the library' convoy={convoy}")
    b = created(srv, "beads/ctl", "new 'Write docs' doc 'The README'")
    e = created(srv, "beads/ctl", "new 'Add tests' dev 'For the callback'")
    lists = ["beads/list", "beads/ready", "beads/ready.dev", "beads/ready.doc", "beads/ready.ops", "beads/graph"]
    mine = [f"beads/{a}/{name}" for name in ("status", "title", "description", "context")]
    convoys = ["convoys/list"] + [f"convoys/{convoy}/{name}" for name in ("beads", "progress", "status", "title", "context")]
    watch = Watch(srv, *lists, *mine, *convoys)
    assert watch._take() == watch.last  # nothing changed: nothing moved

    assert watch.moved("write", f"agent/beads/{b}/description", "The README, and the man page") == set()
    assert watch.moved("write", f"agent/beads/{a}/description", "Use authlib") == {
        f"beads/{a}/description", f"beads/{a}/context"}
    assert watch.moved("write", f"agent/convoys/{convoy}/ctl", f"add_bead {e}") == {
        f"convoys/{convoy}/beads", f"convoys/{convoy}/progress", "convoys/list"}
    assert ok(srv, "read", f"agent/convoys/{convoy}/progress") == "0/2 completed\n"

    assert watch.moved("write", f"agent/beads/{a}/ctl", "claim worker lease=600") == {
        "beads/list", "beads/ready", "beads/ready.dev", "beads/graph", f"beads/{a}/status",
        "convoys/list", f"convoys/{convoy}/status"}  # the convoy started
    assert watch.moved("write", f"agent/beads/{a}/ctl", "claim worker lease=900") == set()  # a lease shows nowhere
    assert watch.moved("write", f"agent/convoys/{convoy}/context", "The app is a Flask service.") == {
        f"beads/{a}/context", f"convoys/{convoy}/context"}
    assert watch.moved("write", f"agent/beads/{a}/ctl", "complete") == {
        "beads/list", "beads/graph", f"beads/{a}/status", f"convoys/{convoy}/progress", "convoys/list"}
    assert ok(srv, "read", "agent/beads/ready.ops") == ""
    assert watch.moved("write", "agent/beads/ctl", "new 'Deploy' ops 'To staging'") == {
        "beads/list", "beads/ready", "beads/ready.ops", "beads/graph"}  # ready.ops had no bead before
    assert ok(srv, "read", "agent/beads/ready.ops").endswith(" pending ops - Deploy\n")


CONFIG = """\
[backends.later]
kind = "command"
argv = ["{program}"]
"""


def test_the_roots_files_move_with_the_sessions_the_configuration_and_the_journals(tmp_path: Path):
    program, roles = tmp_path / "agent-cli", tmp_path / "roles"
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(program=program))
    with anvil_server(extra_args=["--config", str(config)]) as srv:
        watch = Watch(srv, "list", "events", "errors", "backends", "roles", "human/approvals")
        def started() -> None:  # a session starts after `new` is answered: its list line moves then
            assert ok(srv, "read", "agent/bot1/wait") == "idle\n"

        assert watch.moved("write", "agent/ctl", "new sim /tmp name=bot1", then=started) == {"list", "events"}
        assert watch.moved("write", "agent/bot1/ctl", "clear") == set()  # idle again: the same line in list

        assert "later command missing:" in ok(srv, "read", "agent/backends")
        program.write_text("#!/bin/sh\n")
        os.chmod(program, 0o755)
        assert watch.moved("read", "agent/backends") == {"backends"}
        assert "later command ready" in ok(srv, "read", "agent/backends")
        roles.mkdir()
        (roles / "reviewer.md").write_text("You review code.\n")
        assert watch.moved("read", "agent/roles") == {"roles"}

        assert watch.moved("write", "agent/ctl", "frobnicate now", check=False) == {"errors", "events"}
        bead = created(srv, "beads/ctl", "new 'Ship it' dev 'Tag the release' requires_approval=true")
        assert watch.moved("write", f"agent/beads/{bead}/ctl", "claim worker lease=600") == {"events"}
        assert watch.moved("write", f"agent/beads/{bead}/ctl", "complete") == {"events", "human/approvals"}
        assert f" {bead} approve bead {bead}: Ship it" in ok(srv, "read", "agent/human/approvals")
        assert watch.moved("write", f"agent/beads/{bead}/ctl", "approve") == {"events", "human/approvals"}


async def test_queue_moves_when_a_prompt_comes_before_it_is_on_disk(running, tmp_path: Path):
    app = await running(state_dir=tmp_path)
    session = app.sessions.new("sim", "/tmp", name="bot1")
    await until(lambda: not session.busy)
    dispatcher = Dispatcher(app.root, on_error=app.record_error)
    assert isinstance(handle(dispatcher, m.Tversion(tag=c.NOTAG, msize=8192, version="9P2000")), m.Rversion)
    assert isinstance(handle(dispatcher, m.Tattach(tag=1, fid=0, afid=c.NOFID, uname="glenda", aname="",
                                                  n_uname=c.NONUNAME)), m.Rattach)

    def queue() -> tuple[int, int, int]:
        """(qid.version, mtime, length) of bot1/queue, by Tstat."""
        assert isinstance(handle(dispatcher, m.Twalk(tag=2, fid=0, newfid=1, wnames=("bot1", "queue"))), m.Rwalk)
        stat = handle(dispatcher, m.Tstat(tag=3, fid=1)).stat
        assert isinstance(handle(dispatcher, m.Tclunk(tag=4, fid=1)), m.Rclunk)
        return stat.qid.version, stat.mtime, stat.length

    before = queue()
    t0 = int(time.time())
    later = app.sessions.submit("bot1", "hello", "glenda")  # its save runs only once this test awaits
    assert later is not None and session.incoming and not session.queue, "the prompt is on its way to disk"
    version, mtime, length = queue()
    assert length == len("1 glenda 5 hello\n") and version != before[0] and mtime >= t0, (before, version, mtime)
    assert queue() == (version, mtime, length)  # nothing changed since: nothing moved
    await later.wait()
    assert not session.incoming
