"""A prompt's clunk is answered once the prompt is on disk, and the connection goes on meanwhile.

The reply waits in a task (a Deferred) for the database's commit of the
prompt's row: a flush of it is answered after it, a disk that refuses the
prompt turns it into an error (and the prompt is not queued), and a
Tversion drops it while the prompt still lands. The writer thread is held
where an order depends on when it commits (harness/stored.py).
"""

from __future__ import annotations

from anvilfs.app import App
from harness.apps import until
from harness.stored import FullDatabase, hold_writer
from harness.transcript import HELLO, served

OPEN_IN = HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 in]
< Rwalk tag 2 wqids [(0x80 0 *) (0x0 0 *)]
> Topen tag 3 fid 1 mode 1
< Ropen tag 3 qid (0x0 0 *) iounit 8168
> Twrite tag 4 fid 1 offset 0 data "hello"
< Rwrite tag 4 count 5
"""


async def test_the_clunk_is_answered_with_the_prompt_on_disk_and_a_flush_of_it_after_it(tmp_path):
    async with served(App(state_dir=tmp_path)) as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await peer.play(OPEN_IN)
        release = hold_writer(app.db)  # the prompt's row cannot commit yet
        await peer.play("""
> Tclunk tag 5 fid 1
> Tflush tag 6 oldtag 5
> Twalk tag 7 fid 0 newfid 2 wnames [list]
< Rwalk tag 7 wqids [(0x0 * *)]
""")  # the walk sent after the clunk is answered first: the loop went on while the prompt was saved
        release.set()
        await peer.play("""
< Rclunk tag 5
< Rflush tag 6
""")
        assert app.db.read("SELECT text FROM prompts") == [("hello",)]  # on disk when its clunk was answered
        assert "bot1 prompt queued (1 waiting) from glenda" in app.events.text()


async def test_a_prompt_the_disk_refuses_is_an_error_at_its_clunk_and_not_queued(tmp_path):
    async with served(App(state_dir=tmp_path)) as (app, [peer]):
        session = app.sessions.new("sim", "/tmp", name="bot1")
        await until(lambda: not session.busy)
        FullDatabase(app.db)  # the prompt's row cannot be written now
        await peer.play(OPEN_IN + """
> Tclunk tag 5 fid 1
< Rerror tag 5 ename "i/o error: prompt for bot1 not queued: its save failed (No space left on device)*"
""")
        assert not session.queue and not session.incoming and not session.busy
        assert "prompt queued" not in app.events.text()


async def test_a_tversion_drops_the_deferred_reply_but_not_the_prompt(tmp_path):
    async with served(App(state_dir=tmp_path)) as (app, [peer]):
        session = app.sessions.new("sim", "/tmp", name="bot1")
        await peer.play(OPEN_IN + """
> Tclunk tag 5 fid 1
> Tversion tag 65535 msize 8192 version 9P2000
< Rversion tag 65535 msize 8192 version 9P2000
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""
< Rattach tag 1 qid (0x80 0 *)
""")  # no Rclunk between them: nothing of the old session is answered after a Tversion
        await until(lambda: session.turn_count == 1, "the prompt to run")
        assert "bot1 prompt queued (1 waiting) from glenda" in app.events.text()
