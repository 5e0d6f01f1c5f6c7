"""Reads of the files drawn from all beads cost one render per change, and a listing makes no bead's files
(issue 32, item 6). The cost itself is measured by benchmarks/reads.py; here, what is done and how often."""

from __future__ import annotations

import gc
import random

from anvilfs.beads import Board, Convoys, Who, view
from anvilfs.client.protocol import directory_entries
from anvilfs.domain_events import EventBus
from anvilfs.errors import AnvilError
from anvilfs.fs import beads_dir
from anvilfs.fs.stamps import Follows
from anvilfs.journal import Journal
from anvilfs.ninep import Dialect
from anvilfs.server.attrs import length_of
from anvilfs.server.listings import listing_records, pack_records
from anvilfs.tree import Caller, Directory


def tree(beads: int = 30):
    bus = EventBus(Journal())
    board = Board(None, bus, is_session=lambda name: False)
    convoys = Convoys(None, bus, board)
    convoy = convoys.new("Convoy", "goal").id
    made: list[str] = []
    for i in range(beads):
        made.append(board.new(f"Task {i}", "worker", "do", made[-1:], convoy=convoy).id)
    return board, convoys, beads_directory(board, convoys), made


def beads_directory(board, convoys):
    return beads_dir.beads_directory(board, convoys, is_session=lambda name: False)


def read(node) -> bytes:
    handle = node.open(Caller("tester"))
    data = handle.read(0, 1 << 20)
    handle.clunk()
    return data


def look(node) -> bytes:
    """What a client's read costs the server: a walk's qid, a stat (its length), the read."""
    node.stamp()
    length_of(node)
    return read(node)


def test_the_graph_is_drawn_once_per_change_of_the_board_however_often_it_is_read(monkeypatch):
    lines = []
    real = view.graph_line
    monkeypatch.setattr(view, "graph_line", lambda bead, beads: lines.append(bead.id) or real(bead, beads))
    board, _, directory, made = tree()
    graph = directory.lookup("graph")
    first = look(graph)
    for _ in range(5):
        assert look(graph) == first
    assert sorted(lines) == sorted(made)
    board.claim(made[0], Who("tester"), "someone", lease=60)
    after = look(graph)
    assert after != first and look(graph) == after and lines[len(made):] == [made[0]]


def test_listing_the_beads_makes_none_of_their_files(monkeypatch):
    made_files = []
    made_tables = []
    real_files, real_commands = beads_dir._bead_files, beads_dir._bead_commands
    monkeypatch.setattr(beads_dir, "_bead_files", lambda *args: made_files.append(args) or real_files(*args))
    monkeypatch.setattr(beads_dir, "_bead_commands", lambda *args: made_tables.append(args) or real_commands(*args))
    board, _, directory, made = tree()
    names = [node.name for node in directory.children()]
    assert set(made) <= set(names) and made_files == []
    bead = directory.lookup(made[3])
    assert read(bead.lookup("status")) == b"pending\n"
    assert len(made_files) == 1
    assert made_tables == []  # its ctl's commands only once the ctl is opened
    bead.lookup("ctl").open(None)
    assert len(made_tables) == 1


def test_a_listing_shows_each_entry_as_it_is_now_though_records_are_kept():
    board, convoys, _, made = tree()
    directory = beads_dir.convoys_directory(convoys)
    convoy = directory.children()[-1]

    def progress_entry() -> tuple[int, int]:
        data, _ = pack_records(listing_records(convoy, convoy.children(), Dialect.P2000U), 0, 1 << 16)
        (entry,) = [e for e in directory_entries(data, Dialect.P2000U) if e.name == "progress"]
        return entry.qid.version, entry.length

    before = progress_entry()
    assert progress_entry() == before
    board.claim(made[0], Who("tester"), "someone", lease=60)
    board.complete(made[0])
    after = progress_entry()
    assert after != before and read(convoy.lookup("progress")) == b"1/30 completed\n"
    assert after[1] == len(b"1/30 completed\n")


def test_convoys_list_counts_each_convoys_beads_as_they_are():
    board, convoys, _, made = tree(10)
    other = convoys.new("Other", "goal").id
    listing = beads_dir.convoys_directory(convoys).lookup("list")
    assert read(listing).decode().split("\n")[:2] == [f"{convoys.all()[0].id} planning 0/10 - Convoy",
                                                      f"{other} planning 0/0 - Other"]
    convoys.remove_bead(convoys.all()[0].id, made[9])
    convoys.add_bead(other, made[9])
    board.claim(made[0], Who("tester"), "someone", lease=60)
    board.complete(made[0])
    assert read(listing).decode().split("\n")[:2] == [f"{convoys.all()[0].id} in_progress 1/9 - Convoy",
                                                      f"{other} planning 0/1 - Other"]


def test_the_start_builds_directories_a_slice_at_a_time_and_listings_find_them_built():
    board, convoys, _, made = tree(25)
    objects: list = []
    directory = beads_dir.beads_directory(board, convoys, is_session=lambda name: False, objects=objects)
    (beads,) = objects
    slices = 0
    while beads.build_some(10):
        slices += 1
    assert slices == 2 and not beads.build_some(10)
    built = {name: node for name, (_, node) in beads._built.items()}
    assert sorted(built) == sorted(made)
    assert all(directory.lookup(name) is node for name, node in built.items())
    board.claim(made[0], Who("tester"), "someone", lease=60)  # a new Bead object: its directory is built again
    assert beads.build_some(10) is False and directory.lookup(made[0]) is not built[made[0]]


def test_a_listing_kept_between_reads_shows_each_bead_directory_as_a_walk_finds_it():
    board, convoys, directory, made = tree(40)
    first = directory.children()
    for i, bead in enumerate(made[:5]):
        board.claim(bead, Who("tester"), "someone", lease=60)  # a new Bead object: a new directory
        if i < 4:
            board.complete(bead)
    made.append(board.new("Task 40", "worker", "do").id)
    again = directory.children()
    beads = [n for n in again if n.name in made]
    assert [n.name for n in beads] == [b.id for b in board.all()]
    assert all(directory.lookup(n.name) is n for n in beads)
    assert [n.name for n in first if n.name in made] == made[:40]  # the first listing, as it was handed out
    records = pack_records(listing_records(directory, again, Dialect.P2000U), 0, 1 << 20)[0]
    assert [e.name for e in directory_entries(records, Dialect.P2000U)] == [n.name for n in again]


def test_only_the_bead_directories_walked_into_last_keep_their_files(monkeypatch):
    """A client that walks every bead leaves the files of the last KEPT_WITH_FILES only; the others are made
    again when walked into, with the same qids, and a file opened before goes on reading."""
    monkeypatch.setattr(beads_dir, "KEPT_WITH_FILES", 3)
    made_files = []
    real_files = beads_dir._bead_files
    monkeypatch.setattr(beads_dir, "_bead_files", lambda *args: made_files.append(args[2]) or real_files(*args))
    board, _, directory, made = tree(10)
    first = directory.lookup(made[0])
    status = first.lookup("status")
    handle = status.open(Caller("tester"))
    for bead in made[1:4]:  # three more walked into: the first's files are dropped
        assert directory.lookup(bead).lookup("status") is not None
    assert made_files == made[:4] and not first.entries_made
    assert handle.read(0, 100) == b"pending\n"  # the open file still reads
    again = directory.lookup(made[0]).lookup("status")
    assert again is not status and again.path == status.path and read(again) == b"pending\n"
    assert made_files == [*made[:4], made[0]]
    # walking into one that kept its files makes it the last walked into, so it stays
    directory.lookup(made[3]).lookup("status")
    for bead in made[5:7]:
        directory.lookup(bead).lookup("status")
    assert directory.lookup(made[3]).entries_made and not directory.lookup(made[2]).entries_made


def test_the_stamps_of_dropped_bead_files_go_with_them(monkeypatch):
    """Stamps keep a bead file's stamp across a rebuild of its directory (a change of the bead), not for
    ever: once the directories walked into before the last KEPT_WITH_FILES drop their files, their stamps
    go too, so walking every bead leaves no stamp (nor render function) per bead file behind."""
    monkeypatch.setattr(beads_dir, "KEPT_WITH_FILES", 3)
    board, _, directory, made = tree(12)

    def stamps_alive() -> int:
        gc.collect()
        return sum(type(o) is Follows for o in gc.get_objects())

    before = stamps_alive()
    directory.lookup(made[0]).lookup("status")
    per_bead = stamps_alive() - before
    for bead in made[1:]:
        look(directory.lookup(bead).lookup("status"))
    assert per_bead > 0 and stamps_alive() - before == 3 * per_bead


def test_a_listing_after_changes_builds_the_changed_beads_in_place_without_a_pass_over_all():
    """The board notes each bead it replaced or added (Replacements): a listing after a change updates the last
    one at those places (a pass over 10,000 beads cost 1-2 ms at each first read of `ls beads/` after a change,
    issue 32). Over random changes each listing is what a pass over every bead gives."""
    board, convoys, _, made = tree(30)
    objects: list = []
    directory = beads_dir.beads_directory(board, convoys, is_session=lambda name: False, objects=objects)
    (beads,) = objects
    held = directory.children()
    names = [n.name for n in held]
    passes = []
    real = beads._every
    beads._every = lambda: passes.append(1) or real()
    rng = random.Random(32)
    for step in range(200):
        bead = rng.choice(board.all())
        for verb in (lambda: board.claim(bead.id, Who("tester"), "someone", lease=60), lambda: board.unclaim(bead.id),
                     lambda: board.complete(bead.id), lambda: made.append(board.new(f"Late {step}", "worker", "do").id)):
            if rng.random() < 0.3:
                try:
                    verb()
                except AnvilError:
                    pass  # not from this bead's state: the board refused and changed nothing
        listing = directory.children()
        assert [n.name for n in listing if n.name in made] == [b.id for b in board.all()]
        assert all(directory.lookup(n.name) is n for n in listing if n.name in made)
    assert passes == [] and [n.name for n in held] == names  # and the first listing, handed out, as it was


def test_a_kept_listing_holds_no_files_of_bead_directories_made_anew(monkeypatch):
    """The server keeps beads/'s last listing (server/listings.py), so a bead's directory replaced since
    (the bead changed) lives on until the next listing: it must not keep its files with it, else walking
    into each bead around its change, with no listing between, leaves every bead's files behind."""
    monkeypatch.setattr(beads_dir, "KEPT_WITH_FILES", 3)
    board, _, directory, made = tree(12)
    listing_records(directory, directory.children(), Dialect.P2000)
    for bead in made:
        look(directory.lookup(bead).lookup("status"))
        board.claim(bead, Who("tester"), "someone", lease=60)  # its directory made anew at the next walk
        look(directory.lookup(bead).lookup("status"))
        board.complete(bead)  # the next one is ready (a chain)
    gc.collect()
    with_files = [o for o in gc.get_objects() if isinstance(o, Directory) and o.name in made and o.entries_made]
    assert len(with_files) == 3, sorted(o.name for o in with_files)
