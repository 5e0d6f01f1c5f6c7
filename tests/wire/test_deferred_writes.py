"""A status write (an agent's hook, an external session's owner) and an owner's answer in `out` are
answered once what they changed is on disk, and the connection goes on meanwhile.

The save is made by the save queue, not in the event loop: a save there
held up every other connection for an fsync or two (2.4 ms median, up to
13 ms, for each status write of a conductor watching 100 sessions;
benchmarks/README.md). With autojump_clock the save queue writes in the
event loop (savequeue's virtual time), in its own task, so the orders below
are deterministic: the request sent after the write is answered first.
"""

from __future__ import annotations

import errno
import tomllib

from anvilfs.app import App
from anvilfs.backends import ExternalBackend, SimBackend
from anvilfs.sessions import State
from harness.apps import until
from harness.transcript import HELLO, served

OPEN_STATUS = HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [ext status]
< Rwalk tag 2 wqids [(0x80 0 *) (0x0 * *)]
> Topen tag 3 fid 1 mode 1
< Ropen tag 3 qid (0x0 * *) iounit 8168
"""


def _app(tmp_path) -> App:
    return App(state_dir=tmp_path, backends={"external": ExternalBackend(), "sim": SimBackend()})


def _saved(tmp_path) -> dict:
    return tomllib.loads((tmp_path / "sessions" / "ext.toml").read_text())


async def test_an_owners_status_write_is_answered_after_its_save_and_after_what_came_behind_it(autojump_clock, tmp_path):
    async with served(_app(tmp_path)) as (app, [peer]):
        session = app.sessions.new("external", "/tmp", name="ext")
        await until(lambda: session.state is State.IDLE)
        await peer.play(OPEN_STATUS + """
> Twrite tag 4 fid 1 offset 0 data "running step one"
> Twalk tag 5 fid 0 newfid 2 wnames [list]
< Rwalk tag 5 wqids [(0x0 0 *)]
< Rwrite tag 4 count 16
""")  # the walk sent after the write is answered first: the save did not hold up the loop
        assert session.state is State.RUNNING
        saved = _saved(tmp_path)
        assert saved["status"]["state"] == "running", "on disk when its write was answered"


async def test_an_owners_answer_in_out_is_answered_at_its_clunk_after_its_save(autojump_clock, tmp_path):
    async with served(_app(tmp_path)) as (app, [peer]):
        session = app.sessions.new("external", "/tmp", name="ext")
        await until(lambda: session.state is State.IDLE)
        await peer.play(OPEN_STATUS + """
> Twrite tag 4 fid 1 offset 0 data "running"
< Rwrite tag 4 count 7
> Twalk tag 5 fid 0 newfid 2 wnames [ext out]
< Rwalk tag 5 wqids [(0x80 0 *) (0x0 * *)]
> Topen tag 6 fid 2 mode 1
< Ropen tag 6 qid (0x0 * *) iounit 8168
> Twrite tag 7 fid 2 offset 0 data "the answer"
< Rwrite tag 7 count 10
> Tclunk tag 8 fid 2
> Twalk tag 9 fid 0 newfid 3 wnames [list]
< Rwalk tag 9 wqids [(0x0 0 *)]
< Rclunk tag 8
""")
        assert session.state is State.AWAIT
        assert (tmp_path / "sessions" / "ext.out").read_text() == "the answer"
        assert _saved(tmp_path)["status"]["state"] == "await"


async def test_a_status_write_the_disk_refuses_is_answered_and_told_in_events(autojump_clock, tmp_path, monkeypatch):
    """As for ctl writes: the change has happened, so the write is answered, and the save is tried again."""
    async with served(_app(tmp_path)) as (app, [peer]):
        session = app.sessions.new("external", "/tmp", name="ext")
        await until(lambda: session.state is State.IDLE)

        def refused(ops):
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(app.sessions.store.redo, "log", refused)  # no record of the batch: none of it counts
        await peer.play(OPEN_STATUS + """
> Twrite tag 4 fid 1 offset 0 data "running"
< Rwrite tag 4 count 7
""")
        assert session.state is State.RUNNING
        assert "- state: cannot save session ext in" in app.events.text()
        assert "No space left on device; will try again" in app.events.text()
