"""The texts drawn from every bead, kept a change at a time (beads/view.py, issue 32 item 6), are exactly
what a whole render gives, after any changes: random verbs on random beads, compared after each."""

from __future__ import annotations

import random

import pytest

from anvilfs.beads import Board, Convoys, Status, Who, render_graph
from anvilfs.beads import view as view_module
from anvilfs.beads.model import Bead
from anvilfs.domain_events import EventBus
from anvilfs.errors import AnvilError
from anvilfs.journal import Journal

ROLES = ("worker", "reviewer", "writer")


def whole(board: Board) -> dict[str, str]:
    """What each text is, rendered whole from the board as it is (the rules of SPEC §6, not the view)."""
    beads = {b.id: b for b in board.all()}
    listing = [view_module.bead_line(b) for b in beads.values()]
    texts = {"list": "".join(listing) + "".join(f"{i} broken - - {why}\n" for i, why in board.broken.items()),
             "ready": "".join(view_module.bead_line(b) for b in board.ready()), "graph": render_graph(beads)}
    for role in ROLES + ("nobody",):
        texts[f"ready.{role}"] = "".join(view_module.bead_line(b) for b in board.ready(role))
    return texts


def kept(board: Board) -> dict[str, str]:
    texts = {"list": board.view.list_text(), "ready": board.view.ready_text(), "graph": board.view.graph_text()}
    for role in ROLES + ("nobody",):
        texts[f"ready.{role}"] = board.view.ready_text(role)
    return texts


def new_board() -> Board:
    return Board(None, EventBus(Journal()), is_session=lambda name: False)


def change(board: Board, rng: random.Random) -> None:
    """One random verb on a random bead (refused ones too: they change nothing)."""
    beads = board.all()
    if not beads or rng.random() < 0.15:
        deps = rng.sample([b.id for b in beads], min(len(beads), rng.choice((0, 0, 1, 1, 2, 3))))
        board.new(f"Task {len(beads)}", rng.choice(ROLES), "do", deps, requires_approval=rng.random() < 0.2)
        return
    bead = rng.choice(beads)
    verb = rng.choice(("claim", "claim", "complete", "complete", "unclaim", "fail", "reopen", "approve", "reject"))
    try:
        if verb == "claim":
            board.claim(bead.id, Who("tester"), f"holder{rng.randrange(3)}", lease=600)
        elif verb in ("complete", "unclaim", "reopen"):
            getattr(board, verb)(bead.id)
        elif verb == "fail":
            board.fail(bead.id, "it broke")
        elif verb == "approve":
            board.approve(bead.id, Who("inspector"))
        else:
            board.reject(bead.id, "not yet", Who("inspector"))
    except AnvilError:
        pass


@pytest.mark.parametrize("sparse", [view_module.SPARSE, 10**9, 0])  # as set; never, always from the ready alone
@pytest.mark.parametrize("seed", range(12))
def test_kept_texts_are_the_whole_renders_after_random_changes(seed, sparse, monkeypatch):
    monkeypatch.setattr(view_module, "SPARSE", sparse)
    rng = random.Random(seed)
    board = new_board()
    for step in range(400):
        change(board, rng)
        if rng.random() < 0.3 or step == 399:  # several changes between two looks, as between two reads
            assert kept(board) == whole(board), f"seed {seed}, step {step}"


def test_kept_texts_follow_beads_a_file_left_in_a_cycle_or_waiting_for_a_bead_that_is_not_there():
    """Beads read from files edited by hand: a cycle (one of it in progress), a dependency that does not exist."""
    rng = random.Random(7)
    board = new_board()
    for _ in range(60):
        change(board, rng)
    items = board.view._beads  # the board's own dict, as a load fills it
    items["hand-a"] = Bead(id="hand-a", title="A", role="worker", depends_on=["hand-b"], status=Status.IN_PROGRESS,
                           assigned_to="someone")
    items["hand-b"] = Bead(id="hand-b", title="B", role="worker", depends_on=["hand-a"])
    items["hand-c"] = Bead(id="hand-c", title="C", role="worker", depends_on=["hand-b", "gone-1"])
    items["hand-d"] = Bead(id="hand-d", title="D", role="worker", depends_on=["hand-a"])
    assert kept(board) == whole(board)
    assert "blocked (a dependency cycle" in board.view.graph_text()
    board.complete("hand-a")  # the cycle is broken: B, then D, get their waves; C still waits for gone-1
    assert kept(board) == whole(board)
    board.reopen("hand-a")  # and made again
    assert kept(board) == whole(board) and "  hand-b pending" in board.view.graph_text().split("blocked")[1]
    for _ in range(200):
        change(board, rng)
        assert kept(board) == whole(board)


def test_a_reopened_bead_pushes_its_dependents_back_a_wave_without_a_whole_render(monkeypatch):
    board = new_board()
    made: list[str] = []
    for i in range(300):
        made.append(board.new(f"Task {i}", "worker", "do", made[-1:] if i % 100 else []).id)
    for bead in made[:3]:
        board.claim(bead, Who("tester"), "someone", lease=60)
        board.complete(bead)
    board.view.graph_text()
    monkeypatch.setattr(view_module, "waves", lambda beads: pytest.fail("rendered whole"))
    board.reopen(made[1])
    assert board.view.graph_text() == render_graph({b.id: b for b in board.all()})


def test_a_claim_redoes_one_line_of_the_graph_not_every_line(monkeypatch):
    board = new_board()
    made: list[str] = []
    for i in range(200):
        made.append(board.new(f"Task {i}", "worker", "do", made[-1:] if i % 20 else []).id)
    board.view.graph_text()
    lines = []
    real = view_module.graph_line
    monkeypatch.setattr(view_module, "graph_line", lambda bead, beads: lines.append(bead.id) or real(bead, beads))
    board.claim(made[0], Who("tester"), "someone", lease=60)
    assert board.view.graph_text() == render_graph({b.id: b for b in board.all()})
    assert lines == [made[0]]
    board.complete(made[0])  # its one dependent's line loses its arrow, and moves to wave 1 with the rest of its chain
    lines.clear()
    assert board.view.graph_text() == render_graph({b.id: b for b in board.all()})
    assert sorted(lines) == sorted(made[:2])


@pytest.mark.parametrize("seed", range(6))
def test_each_convoys_beads_kept_a_change_at_a_time_are_those_the_board_says(seed):
    """Convoys' members (beads_of, progress, convoys/list) follow beads joining, leaving and coming back."""
    rng = random.Random(seed)
    board = new_board()
    convoys = Convoys(None, board.bus, board)
    ids = [convoys.new(f"Convoy {i}", "goal").id for i in range(4)]
    for step in range(300):
        if rng.random() < 0.3 and board.all():
            bead = rng.choice(board.all())
            try:
                if bead.convoy:
                    convoys.remove_bead(bead.convoy, bead.id)
                else:
                    convoys.add_bead(rng.choice(ids), bead.id)
            except AnvilError:
                pass
        else:
            change(board, rng)
        if rng.random() < 0.3:
            for convoy in ids:
                members = [b for b in board.all() if b.convoy == convoy]
                assert convoys.beads_of(convoy) == members, f"seed {seed}, step {step}"
                done = sum(b.status is Status.COMPLETED for b in members)
                assert convoys.progress(convoy) == f"{done}/{len(members)} completed"


def test_a_follower_takes_the_noted_changes_and_looks_at_everything_when_notes_cannot_tell():
    board = new_board()
    made = [board.new(f"Task {i}", "worker", "do").id for i in range(3)]
    follower = view_module.Replaced(board.by_id(), board.replacements)
    assert [new.id for old, new in follower.look()] == made  # the first look: every bead, added
    board.claim(made[1], Who("tester"), "someone", lease=60)
    board.unclaim(made[1])
    assert [(old.status.value, new.status.value) for old, new in follower.look()] == [
        ("pending", "in_progress"), ("in_progress", "pending")]
    board.by_id()["by-hand"] = Bead(id="by-hand", title="Hand", role="worker")  # no note: as a load fills it
    assert follower.look() is None
    for _ in range(view_module.Replacements.KEPT + 1):
        board.claim(made[0], Who("tester"), "someone", lease=60)
        board.unclaim(made[0])
    assert follower.look() is None  # too long without a look: the notes it needs are gone
    assert kept(board) == whole(board)
