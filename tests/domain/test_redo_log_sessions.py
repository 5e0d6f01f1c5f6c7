"""Review of the redo log (ef30a3b, 21fea3e), through the whole App: a clean stop and a start, no power cut
needed. Both fail against the code as reviewed."""

from __future__ import annotations

import errno

import pytest
import trio

from anvilfs.errors import AnvilError
from anvilfs.sessions import State
from harness.apps import started, until
from harness.full_disk import FullDisk




async def test_a_removed_session_whose_toml_was_refused_stays_removed_after_a_clean_restart(autojump_clock, tmp_path):
    """Its last .toml is refused in place (ENOSPC for a moment): logged, so the stop is answered, and
    kept in RedoLog._unapplied. `remove` moves the files and logs "g", but never clears _unapplied: the
    clean stop's checkpoint logs the old .toml again after the "g", and the next start replays it."""
    state = tmp_path / "state"
    async with started(state) as app:
        app.sessions.new("sim", "/tmp", name="gone1")
        await until(lambda: app.sessions.get("gone1").state is State.IDLE)
        disk = FullDisk(app.sessions.store.files, lambda name: name == "gone1.toml")
        app.sessions.stop("gone1")  # answered: its .toml is in the redo log
        await until(lambda: app.sessions.get("gone1").state is State.STOPPED)
        app.sessions.remove("gone1")  # answered: removed
        disk.full = False  # room again
        await trio.sleep(2)
        assert app.sessions.find("gone1") is None

    async with started(state) as again:
        assert again.sessions.find("gone1") is None, "the removed session came back"


async def test_a_new_session_whose_save_failed_does_not_appear_later(autojump_clock, tmp_path):
    """`new` answers "cannot save session boom" and forgets the session, but save_now now goes through the
    queue: `_state_soon` left (session, "state") pending, and the failed flush keeps it (_keep). Once the
    disk takes writes again the queue's retry writes boom.toml: a session that was refused exists after
    all (its name is taken now, and a restart brings it up)."""
    state = tmp_path / "state"
    async with started(state) as app:
        redo = app.sessions.store.redo
        real_log = redo.log
        full = [True]

        def disk_full(ops):
            if full[0] and any(op.name.startswith("boom.") for op in ops):
                raise OSError(errno.ENOSPC, "No space left on device")
            real_log(ops)

        redo.log = disk_full
        with pytest.raises(AnvilError, match="cannot save session boom"):
            app.sessions.new("sim", "/tmp", name="boom")
        assert app.sessions.find("boom") is None
        full[0] = False  # the disk has room again
        app.sessions.new("sim", "/tmp", name="other")  # any activity wakes the queue
        await trio.sleep(5)
        assert not (state / "sessions" / "boom.toml").exists(), "the refused session was written after all"
    async with started(state) as again:
        assert again.sessions.find("boom") is None, "the refused session is there after a restart"
