"""The one-shot import of sessions kept in files (sessions/imported.py), on state directories made by 0dec9af.

tests/fixtures/sessions-0dec9af/ was written by that code (tests/harness/old_sessions_state.py, which says
how): `stopped/` after a clean stop, `killed/` as a SIGKILL at a prompt's answer left it. Each `.json` beside
them is what that code's own server, started --paused on the directory, had: a paused start here, after
the import, must have the same.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from anvilfs.app import App
from anvilfs.sessions import imported
from harness.apps import started
from harness.deadlines import within
from harness.old_sessions_state import dump

FIXTURES = Path(__file__).parent.parent / "fixtures" / "sessions-0dec9af"


def copied(tmp_path: Path, name: str) -> Path:
    state = tmp_path / name
    shutil.copytree(FIXTURES / name, state)
    for path in (state, *state.rglob("*")):  # as the server left them (a checkout makes them 0755 and 0644)
        path.chmod(0o700 if path.is_dir() else 0o600)
    return state


def expected(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["stopped", "killed"])
async def test_an_old_state_directory_comes_up_with_everything_in_it_once(tmp_path, name):
    state = copied(tmp_path, name)
    async with started(state, paused=True) as app:
        assert dump(app) == expected(name)
        assert "sessions imported from the files of an older anvilfs" in app.events.text()
    [kept] = (state / "imported").iterdir()  # imported/TIME/
    assert sorted(p.name for p in kept.iterdir()) == sorted(
        p.name for p in (FIXTURES / name).iterdir() if p.name in imported.OLD_DIRS)
    assert not any((state / old).exists() for old in imported.OLD_DIRS), "the files moved out of the way"
    async with started(state, paused=True) as again:  # imported once: the rows as the first start left them
        assert dump(again) == expected(name)
        assert "imported" not in again.events.text()
    with sqlite3.connect(state / "anvilfs.db") as conn:
        assert conn.execute("SELECT name, removed_at FROM sessions WHERE removed_at IS NOT NULL").fetchall() == [
            ("gone", "2026-12-06T07:34:41Z")]


async def test_what_a_power_cut_kept_out_of_the_files_comes_from_the_redo_log(tmp_path):
    """No checkpoint had run: the redo log has every write, so files that lost them all come back whole."""
    state = copied(tmp_path, "killed")
    for file in (state / "sessions").iterdir():
        file.write_bytes(b"")
    async with started(state, paused=True) as app:
        assert dump(app) == expected("killed")


def test_an_import_cut_short_before_its_commit_is_done_again_whole(tmp_path, monkeypatch):
    state = copied(tmp_path, "killed")
    real = imported._insert

    def crash_after_some(conn, rows, problems):
        real(conn, rows, problems)
        raise OSError(5, "the process died here")  # the transaction never committed

    monkeypatch.setattr(imported, "_insert", crash_after_some)
    with pytest.raises(OSError, match="died here"):
        App(state_dir=state)
    monkeypatch.undo()
    assert (state / "sessions").is_dir() and not (state / "imported").exists()
    App(state_dir=state).db.close()
    with sqlite3.connect(state / "anvilfs.db") as conn:
        assert sorted(conn.execute("SELECT name FROM sessions")) == [("answered",), ("busy",), ("exited1",),
                                                                    ("gone",)]


async def test_an_import_cut_short_after_its_commit_only_moves_the_files(tmp_path, monkeypatch):
    state = copied(tmp_path, "stopped")
    moves = []
    real = imported.PrivateDir.move

    def die_at_the_second_move(directory, name, dest, new_name):
        if moves:
            raise OSError(5, "the process died here")
        moves.append(name)
        real(directory, name, dest, new_name)

    monkeypatch.setattr(imported.PrivateDir, "move", die_at_the_second_move)
    with pytest.raises(OSError, match="died here"):
        App(state_dir=state)
    monkeypatch.undo()
    async with started(state, paused=True) as app:
        assert dump(app) == expected("stopped")
    assert not any((state / old).exists() for old in imported.OLD_DIRS)


async def test_a_damaged_file_is_reported_and_the_rest_imported(tmp_path):
    state = copied(tmp_path, "stopped")
    (state / "sessions" / "answered.toml").write_text("this is [not toml")
    async with started(state, paused=True) as app:
        assert sorted(s.name for s in app.sessions.all()) == ["busy", "exited1"]
        assert "sessions/answered.toml cannot be read" in app.events.text()
    [kept] = (state / "imported").iterdir()
    assert (kept / "sessions" / "answered.toml").read_text() == "this is [not toml"


async def test_the_mailboxes_of_removed_sessions_are_left_to_the_mail_import(tmp_path, monkeypatch):
    """removed/ holds removed sessions' files and removed mailboxes (NAME.TIME.mail/): only the files are
    the sessions' to import and move; the mailbox stays where mail's import looks for it."""
    from anvilfs import app as app_module

    monkeypatch.setattr(app_module.App, "_import_mail", lambda self, state, db: None)  # only the sessions' import
    state = copied(tmp_path, "stopped")
    mailbox = state / "removed" / "gone.2026-12-06T073441Z.mail" / "inbox"
    mailbox.mkdir(parents=True, mode=0o700)
    mailbox.parent.chmod(0o700)
    async with started(state, paused=True) as app:
        assert dump(app) == expected("stopped")
    assert sorted(p.name for p in (state / "removed").iterdir()) == ["gone.2026-12-06T073441Z.mail"]
    [kept] = (state / "imported").iterdir()
    assert sorted(p.name for p in (kept / "removed").iterdir()) == [
        "gone.2026-12-06T073441Z.log", "gone.2026-12-06T073441Z.out", "gone.2026-12-06T073441Z.toml"]


async def test_old_files_put_back_after_the_import_are_moved_away_not_imported_again(tmp_path):
    state = copied(tmp_path, "stopped")
    async with started(state, paused=True):
        pass
    shutil.copytree(FIXTURES / "stopped" / "sessions", state / "sessions")  # put back by hand
    for path in (state / "sessions", *(state / "sessions").iterdir()):
        path.chmod(0o700 if path.is_dir() else 0o600)
    async with started(state, paused=True) as app:
        assert dump(app) == expected("stopped")
    assert not (state / "sessions").exists()
    with sqlite3.connect(state / "anvilfs.db") as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (4,)


async def test_old_files_put_back_on_a_state_that_never_had_any_do_not_stop_the_start(tmp_path):
    """A state begun by this anvilfs has sessions in the database but no 'imported' row (there was nothing to
    import); old files put there later (a backup restored over it) must not make the next start fail."""
    state = tmp_path / "fresh"
    async with started(state, paused=True) as app:
        app.sessions.new("sim", str(tmp_path), name="answered")  # the name a session of the old files has
        with within(30, "the new session's row"):
            await app.db.call(lambda conn: None).wait()
    shutil.copytree(FIXTURES / "stopped" / "sessions", state / "sessions")
    for path in (state / "sessions", *(state / "sessions").iterdir()):
        path.chmod(0o700 if path.is_dir() else 0o600)
    async with started(state, paused=True) as app:
        assert app.sessions.find("answered") is not None
        assert "session answered was not imported as live" in app.events.text()
