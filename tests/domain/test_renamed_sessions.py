"""A session saved under a name the server keeps now (options.SERVER_NAMES, the root's files) is renamed
when it is restored: its notice in `events`, the beads it holds, the convoys it coordinates and its mail
follow it, and a start killed half-way through the rename is finished by the next one.
(The real-server story: tests/server/test_reserved_names.py.)"""

from __future__ import annotations

import sqlite3

import pytest

from anvilfs.beads import Who
from anvilfs.errors import NameTaken
from anvilfs.mail import Draft, MessageType
from anvilfs.sessions import SERVER_NAMES, RestartPolicy, State
from harness.apps import started, until

NO_RESTARTS = RestartPolicy(enabled=False)


async def _older_state(state, names: list[str]) -> dict[str, str]:
    """Sessions of NAMES, each with a message in its inbox, holding a bead and coordinating a convoy, made
    with the names reserved since taken out (as an older anvilfs had them): the bead and convoy of each."""
    made = {}
    async with started(state, restart=NO_RESTARTS) as app:
        app.sessions.reserved -= SERVER_NAMES
        for name in names:
            session = app.sessions.new("sim", "/tmp", name=name)
            await until(lambda: session.state is State.IDLE)
            app.post.send("human", Draft(to=name, type=MessageType.QUERY_REQUEST, subject=f"for {name}"))
            bead = app.board.new(f"Work of {name}", "dev", "d")
            app.board.claim(bead.id, Who(name, name))
            convoy = app.convoys.new(f"Convoy of {name}", "g")
            app.convoys.set_coordinator(convoy.id, name)
            made[name] = f"{bead.id} {convoy.id}"
    return made


async def test_renamed_sessions_keep_their_beads_convoys_and_mail_with_a_notice(tmp_path):
    made = await _older_state(tmp_path, ["usage", "merges-1", "merges"])
    async with started(tmp_path, restart=NO_RESTARTS) as app:
        # merges-1 was taken already: the first free one is merges-2
        assert sorted(s.name for s in app.sessions.all()) == ["merges-1", "merges-2", "usage-1"]
        events = app.events.text()
        for old, new in (("usage", "usage-1"), ("merges", "merges-2")):
            assert f" {new} renamed from {old}: the name {old} is reserved now" in events, events
            bead, convoy = made[old].split()
            assert app.board.get(bead).assigned_to == new
            assert f"bead:{bead} reassign in_progress {new}" in events
            assert app.convoys.get(convoy).coordinator == new
            assert [m.subject for m in app.post.inbox(new)] == [f"for {old}"]
            assert app.post.inbox(old) == []
        assert " merges-1 renamed" not in events  # its name was never reserved
        assert app.board.get(made["merges-1"].split()[0]).assigned_to == "merges-1"
        with pytest.raises(NameTaken, match="'usage' is reserved for a file beside the sessions"):
            app.sessions.new("sim", "/tmp", name="usage")


async def test_a_rename_cut_short_is_finished_by_the_next_start(tmp_path):
    """The old name's row is renamed last: a start killed before it left the mail moved and the row as it was
    (here made by hand); the next start renames it again, to the same name, and moves what is left."""
    made = await _older_state(tmp_path, ["merges"])
    home = tmp_path / "agents"
    (home / "merges-1").mkdir(mode=0o700)  # the private directory, moved already
    db = sqlite3.connect(tmp_path / "anvilfs.db")
    with db:
        db.execute("UPDATE mail SET participant = 'merges-1' WHERE participant = 'merges'")
    db.close()
    async with started(tmp_path, restart=NO_RESTARTS) as app:
        assert [s.name for s in app.sessions.all()] == ["merges-1"]
        assert [m.subject for m in app.post.inbox("merges-1")] == ["for merges"]
        assert app.board.get(made["merges"].split()[0]).assigned_to == "merges-1"  # moved now
        assert " merges-1 renamed from merges: " in app.events.text()
        assert (home / "merges-1").is_dir() and not (home / "merges").exists()
    async with started(tmp_path, restart=NO_RESTARTS) as app:
        assert [s.name for s in app.sessions.all()] == ["merges-1"]
        assert " renamed from " not in app.events.text()
