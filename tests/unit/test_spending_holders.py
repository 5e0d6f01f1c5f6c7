"""Which beads a session holds, as a turn's start asks (spending.py): kept from the board's changes, not from a
walk of every bead at each turn after a change (10,000 beads: 1-2 ms of the loop a prompt, issue 32)."""

from __future__ import annotations

import random
from types import SimpleNamespace

from anvilfs.beads import Board, Status, Who
from anvilfs.domain_events import EventBus
from anvilfs.errors import AnvilError
from anvilfs.journal import Journal
from anvilfs.spending import Spending


def test_the_beads_each_session_holds_follow_claims_releases_and_completions_without_a_walk_of_the_board():
    bus = EventBus(Journal())
    board = Board(None, bus, is_session=lambda name: False)
    made = [board.new(f"Task {i}", "worker", "do").id for i in range(20)]
    sessions = SimpleNamespace(ledger=None, all=lambda: [], find=lambda name: None)  # none runs a turn here
    spending = Spending(sessions, board, post=None, bus=bus)
    holders = ["ann", "bob", "cy"]
    assert all(spending._held(name) == [] for name in holders)
    walks = []
    real = board.all
    board.all = lambda: walks.append(1) or real()
    rng = random.Random(33)
    for step in range(300):
        bead, who = rng.choice(made), rng.choice(holders)
        verbs = [lambda: board.claim(bead, Who("tester"), who, lease=60), lambda: board.unclaim(bead),
                 lambda: board.complete(bead), lambda: made.append(board.new(f"Late {step}", "worker", "do").id)]
        try:
            rng.choice(verbs)()
        except AnvilError:
            pass  # not from this bead's state: nothing changed
        name = rng.choice(holders)
        expected = {b.id for b in real() if b.assigned_to == name and b.status is Status.IN_PROGRESS}
        assert {b.id for b in spending._held(name)} == expected, step
    assert walks == [], "a look at what a session holds walked the board"
    assert any(spending._held(name) for name in holders)  # the steps did leave some held
