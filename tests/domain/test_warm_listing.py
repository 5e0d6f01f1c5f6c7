"""The first listing of beads/ after a start finds each bead's record encoded ahead (issue 32, item 6)."""

from __future__ import annotations

import trio
import trio.testing

from anvilfs.app import App
from anvilfs.fs import beads_dir, session_dir
from anvilfs.ninep import Dialect
from anvilfs.server import attrs
from harness.apps import started


async def test_a_start_encodes_each_beads_listing_record_and_entry_ahead(tmp_path):
    async with started(tmp_path) as first:
        for n in range(30):
            first.board.new(f"bead {n}", "dev", "x")
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path)
        app.warm = attrs.warm  # what the server sets (serve.Server)
        await nursery.start(app.run)
        with trio.fail_after(30):  # build_ahead done (a lookup before it would build the directories itself)
            await trio.testing.wait_all_tasks_blocked()
        beads = app.root.lookup("beads")
        dirs = [beads.lookup(b.id) for b in app.board.all()]
        assert len(dirs) == 30
        for d in dirs:
            assert d.record[0] is Dialect.P2000 and d.record[4] == attrs.stat_record(d, Dialect.P2000)
            assert d.entry == attrs._entry_parts(d)
        # and the listing of each kind, made after its last slice (a step of its own): the first ls finds it
        assert [len(objects._listed[1]) for objects in app.tree._objects] == [0, 30, 0]
        nursery.cancel_scope.cancel()


async def test_without_the_server_nothing_is_encoded(tmp_path):
    async with started(tmp_path) as first:
        first.board.new("one bead", "dev", "x")
    async with started(tmp_path) as app:
        with trio.fail_after(30):
            await trio.testing.wait_all_tasks_blocked()
        assert app.root.lookup("beads").lookup(app.board.all()[0].id).record is None


async def test_a_start_makes_every_sessions_files_and_no_beads(tmp_path, monkeypatch):
    """The web reads every session's queue when it opens: their files are made at the start, between other
    work, and frozen with it, not all at once when the first client walks to them (issue 32, item 6)."""
    async with started(tmp_path) as first:
        for n in range(3):
            first.sessions.new("sim", str(tmp_path), name=f"s{n}")
        first.board.new("one bead", "dev", "x")
    made = []
    real_session, real_bead = session_dir._session_files, beads_dir._bead_files
    monkeypatch.setattr(session_dir, "_session_files", lambda *args: made.append(args[1].name) or real_session(*args))
    monkeypatch.setattr(beads_dir, "_bead_files", lambda *args: made.append(args[2]) or real_bead(*args))
    async with started(tmp_path) as app:
        with trio.fail_after(30):  # build_ahead done
            await trio.testing.wait_all_tasks_blocked()
        assert sorted(made) == ["s0", "s1", "s2"]
        assert app.root.lookup("s1").lookup("queue") is not None and sorted(made) == ["s0", "s1", "s2"]


async def test_a_start_has_built_ahead_before_it_says_it_has_started(tmp_path):
    """The server accepts its first client once the app has started: by then every directory is built, so no
    client's round trip waits for a build step (issue 32, item 6: a cold read of 7 chunks took up to 42 ms)."""
    async with started(tmp_path) as first:
        for n in range(5):
            first.board.new(f"bead {n}", "dev", "x")
    async with trio.open_nursery() as nursery:
        app = App(state_dir=tmp_path)
        app.warm = attrs.warm
        built = []
        app.built = lambda: built.append(1)
        await nursery.start(app.run)  # no wait for the tasks to settle
        assert built == [1]
        assert [len(objects._listed[1]) for objects in app.tree._objects] == [0, 5, 0]
        nursery.cancel_scope.cancel()
