"""The check of STATE/anvilfs.db once the app is up: SQLite's quick_check in a thread, what it found in
`errors` (damaged) or `events` (sound). The same over 9P: tests/server/test_damaged_database.py."""

from __future__ import annotations

import threading

import trio

import anvilfs.app as app_module
from anvilfs.app import App
from anvilfs.storage import QuickCheck
from harness.apps import started, until
from harness.damage import damage_a_page
from harness.deadlines import WAIT


async def test_a_sound_database_is_said_in_events_and_not_in_errors(tmp_path):
    async with started(tmp_path / "state") as app:
        await until(lambda: "quick_check found nothing wrong" in app.events.text())
        assert "database" not in app.errors.text()


async def test_a_damaged_database_is_said_in_errors_with_what_sqlite_found(tmp_path):
    async with started(tmp_path / "state"):
        pass
    damage_a_page(tmp_path / "state" / "anvilfs.db")
    async with started(tmp_path / "state") as app:
        await until(lambda: "is damaged" in app.errors.text())
        errors = app.errors.text()
        assert "anvilfs.db is damaged: SQLite's quick_check says Page " in errors and " more)" in errors, errors
        assert len(errors.splitlines()) == 1, errors  # one line: what SQLite says on many, three of them
        assert "found nothing wrong" not in app.events.text()



async def test_a_stop_ends_the_check_and_closes_the_database_after_it(tmp_path, monkeypatch):
    """A check under way when the server stops is told to stop (storage.QuickCheck.stop), and the app waits
    for its thread before it closes the database: the check's connection is never the last one open."""
    order, told = [], threading.Event()

    class UntilStopped(QuickCheck):
        def stop(self) -> None:
            super().stop()
            told.set()

        def _check(self) -> list[str] | None:
            order.append("checking")
            order.append("told to stop" if told.wait(WAIT) else "never told")
            order.append(f"database closed: {app.db._closing}")
            return None

    monkeypatch.setattr(app_module, "QuickCheck", UntilStopped)
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path / "state")
        await nursery.start(app.run)
        await until(lambda: order == ["checking"])
        nursery.cancel_scope.cancel()
    assert order == ["checking", "told to stop", "database closed: False"]
    assert app.db._closing  # and closed after it


async def test_a_stop_before_the_checks_thread_began_ends_at_once(tmp_path):
    """The app stopped right after it started: trio may drop the check's thread before it begins, and the
    stop must not wait for a check that will never run (it did, for ever, before QuickCheck.stop set done)."""
    for _ in range(20):  # the stop lands before or after the thread's start, as the scheduler goes
        async with started(tmp_path / "state"):
            pass

