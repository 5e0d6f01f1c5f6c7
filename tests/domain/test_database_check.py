"""The check of STATE/anvilfs.db once the app is up: SQLite's quick_check in a thread, what it found in
`errors` (damaged) or `events` (sound). The same over 9P: tests/server/test_damaged_database.py."""

from __future__ import annotations

from harness.apps import started, until
from harness.damage import damage_a_page


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

