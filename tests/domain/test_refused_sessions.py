"""Changes the disk refused, through the whole App: a clean stop and a start after the disk takes writes again.

(Once the review of the redo log, ef30a3b and 21fea3e: both cases failed against the code as reviewed.)
"""

from __future__ import annotations

import pytest

from anvilfs.errors import AnvilError
from anvilfs.sessions import State
from harness.apps import started, until
from harness.stored import FullDatabase, answered


async def test_a_removed_session_whose_saves_were_refused_stays_removed_after_a_clean_restart(tmp_path):
    """Its stop and its removal are refused (ENOSPC for a moment): both writes fail with EIO, both changes
    stay made in memory and are saved once the disk takes them; a clean restart does not bring it back."""
    state = tmp_path / "state"
    async with started(state) as app:
        app.sessions.new("sim", "/tmp", name="gone1")
        await until(lambda: app.sessions.get("gone1").state is State.IDLE)
        disk = FullDatabase(app.db)
        with pytest.raises(AnvilError, match="not saved: the disk refused it"):
            await answered(lambda: app.sessions.stop("gone1"))
        assert app.sessions.get("gone1").state is State.STOPPED
        with pytest.raises(AnvilError, match="not saved: the disk refused it"):
            await answered(lambda: app.sessions.remove("gone1"))
        assert app.sessions.find("gone1") is None
        disk.full = False  # room again
        await until(lambda: app.db.read("SELECT removed_at IS NOT NULL FROM sessions WHERE name = 'gone1'") == [(1,)],
                    "the removal saved on a retry")
    async with started(state) as again:
        assert again.sessions.find("gone1") is None, "the removed session came back"


async def test_a_new_session_whose_save_failed_does_not_appear_later(tmp_path):
    """`new` answers EIO and forgets the session; once the disk takes writes again, nothing writes it
    after all (its name stays free, and a restart does not bring it up)."""
    state = tmp_path / "state"
    async with started(state) as app:
        disk = FullDatabase(app.db)
        with pytest.raises(AnvilError, match="not saved: the disk refused it"):
            await answered(lambda: app.sessions.new("sim", "/tmp", name="boom"))
        assert app.sessions.find("boom") is None
        disk.full = False  # the disk has room again
        other = await answered(lambda: app.sessions.new("sim", "/tmp", name="other"))  # any activity
        await until(lambda: other.state is State.IDLE)
        app.db.flush(30)
        assert app.db.read("SELECT name FROM sessions") == [("other",)], "the refused session was written after all"
    async with started(state) as again:
        assert again.sessions.find("boom") is None, "the refused session is there after a restart"
