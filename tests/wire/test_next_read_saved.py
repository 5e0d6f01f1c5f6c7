"""A read of an external session's `next` takes a prompt and begins its turn (sessions/owned.py: "saved, with
the prompt as the turn's, before the read is answered"): its Rread must wait for that save like a write's
reply does, or a kill right after it leaves the owner working on a turn the restarted server never had."""

from __future__ import annotations

import pytest

from anvilfs.app import App
from anvilfs.backends import ExternalBackend, SimBackend
from harness.apps import until
from harness.stored import hold_writer
from harness.transcript import HELLO, served

NEW = HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [ctl]
< Rwalk tag 2 wqids [(0x0 0 *)]
> Topen tag 3 fid 1 mode 1
< Ropen tag 3 qid (0x0 0 *) iounit 8168
> Twrite tag 4 fid 1 offset 0 data "new external /tmp name=ext role=conductor"
< Rwrite tag 4 count 41
> Tclunk tag 5 fid 1
< Rclunk tag 5
> Twalk tag 6 fid 0 newfid 2 wnames [ext next]
< Rwalk tag 6 wqids [(0x80 * *) (0x0 * *)]
> Topen tag 7 fid 2 mode 0
< Ropen tag 7 qid (0x0 * *) iounit 8168
"""


@pytest.mark.xfail(strict=True, reason="not fixed: dispatch.read and parked._finish_blocked do not collect what a "
                   "read changes (see the review's report)")
async def test_the_read_of_next_that_begins_a_turn_is_answered_once_the_turn_is_on_disk(tmp_path):
    async with served(App(state_dir=tmp_path, backends={"external": ExternalBackend(), "sim": SimBackend()})) as (app, [peer]):
        await peer.play(NEW)
        session = app.sessions.get("ext")
        app.sessions.submit("ext", "review it", "tester")
        await until(lambda: session.queue, "the prompt to be queued")
        release = hold_writer(app.db)  # the turn's save cannot commit yet
        try:
            await peer.play("""
> Tread tag 8 fid 2 offset 0 count 100
> Twalk tag 9 fid 0 newfid 3 wnames [list]
< Rwalk tag 9 wqids [(0x0 * *)]
""")  # the walk sent after the read is answered first: the read waits for the turn's row
        finally:
            release.set()
        await peer.play("""
< Rread tag 8 data "review it"
""")
