"""A read of an external session's `next` takes a prompt and begins its turn (sessions/owned.py: "saved, with
the prompt as the turn's, before the read is answered"): its Rread must wait for that save like a write's
reply does, or a kill right after it leaves the owner working on a turn the restarted server never had."""

from __future__ import annotations

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


async def test_a_read_of_next_that_waited_for_its_prompt_is_answered_once_the_turn_is_on_disk(tmp_path, monkeypatch):
    """The same for a read that blocked first: it wakes when the prompt lands, takes it, and its Rread waits
    for the turn's row; a Tflush sent meanwhile is answered after it (the prompt is taken: flush(5))."""
    async with served(App(state_dir=tmp_path, backends={"external": ExternalBackend(), "sim": SimBackend()})) as (app, [peer]):
        await peer.play(NEW)
        held = []
        store = app.sessions.saver.store
        real_add = store.add_prompt

        def add_prompt(session, prompt):  # the writer is held as the prompt lands, before the read wakes
            commit = real_add(session, prompt)
            commit.then(lambda error: held.append(hold_writer(app.db)))
            return commit

        monkeypatch.setattr(store, "add_prompt", add_prompt)
        await peer.play("""
> Tread tag 8 fid 2 offset 0 count 100
""")  # blocks: nothing queued
        app.sessions.submit("ext", "review it", "tester")
        await until(lambda: held, "the prompt to land, the writer held behind it")
        try:
            await peer.play("""
> Tflush tag 9 oldtag 8
> Twalk tag 10 fid 0 newfid 3 wnames [list]
< Rwalk tag 10 wqids [(0x0 * *)]
""")  # answered while the read waits for the turn's row: neither the Rread nor the Rflush came yet
        finally:
            held[0].set()
        await peer.play("""
< Rread tag 8 data "review it"
< Rflush tag 9
""")
