"""Beads and convoys as a domain (SPEC §6): real files in a private directory, no 9P."""

from __future__ import annotations

import os

import pytest

from anvilfs.beads import Board, Convoys, Status, Who, render_graph
from anvilfs.domain_events import EventBus, SessionEnded
from anvilfs.errors import Busy, InvalidRequest, NotFound, NotPermitted
from anvilfs.journal import Journal
from anvilfs.storage import PrivateDir, TomlObjects
from harness.inline_writes import InlineDatabase, Messages

SESSIONS = {"bot1", "bot2", "rev"}


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def make(tmp_path, clock=None):
    state = PrivateDir(tmp_path / "state")
    journal = Journal()
    bus = EventBus(journal)
    history, db = Messages(), InlineDatabase()
    board = Board(TomlObjects(state.subdir("beads"), "bead", db, history), bus, is_session=SESSIONS.__contains__,
                  clock=clock or Clock())
    convoys = Convoys(TomlObjects(state.subdir("convoys"), "convoy", db, history), bus, board)
    problems = board.load() + convoys.load()
    return board, convoys, journal, history, problems


def test_ids_read_like_their_titles_and_never_repeat(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth system", "researcher", "Analyze existing auth code")
    b = board.new("Implement OAuth", "developer", "Add OAuth based on research", [a.id])
    assert (a.id, b.id) == ("research-auth-001", "impl-oauth-002")
    again, *_ = make(tmp_path)  # after a restart the numbers go on
    assert again.new("Research auth system", "researcher", "more").id == "research-auth-003"


def test_ready_lists_pending_beads_whose_dependencies_are_completed(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    b = board.new("Implement OAuth", "developer", "d", [a.id])
    assert [x.id for x in board.ready()] == [a.id] and board.ready("developer") == []
    with pytest.raises(Busy, match=f"waits for {a.id} to be completed"):
        board.claim(b.id, Who("bot2", "bot2"))
    board.claim(a.id, Who("bot1", "bot1"))
    assert board.ready() == []
    board.complete(a.id, "/tmp/auth.md")
    assert [x.id for x in board.ready("developer")] == [b.id]
    assert all(board.is_ready(x) == (x in board.ready()) for x in board.all())


def test_a_claim_is_won_once_and_the_others_are_told_who_won(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    board.claim(a.id, Who("bot1", "bot1"))
    with pytest.raises(Busy, match="already claimed by bot1"):
        board.claim(a.id, Who("bot2", "bot2"))
    assert board.get(a.id).assigned_to == "bot1"


def test_who_claims(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    with pytest.raises(InvalidRequest, match="you \\(glenda\\) are not a session"):
        board.claim(a.id, Who("glenda"))
    with pytest.raises(NotFound, match="'ghost' is not a session; a claim for another name needs lease=SECONDS"):
        board.claim(a.id, Who("glenda"), "ghost")
    with pytest.raises(InvalidRequest, match="lease=0"):
        board.claim(a.id, Who("glenda"), "ghost", lease=0)
    assert board.claim(a.id, Who("bot1", "bot1")).assigned_to == "bot1"  # the caller's own session


def test_verbs_only_from_the_states_where_they_make_sense(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    with pytest.raises(Busy, match="is pending: it cannot take complete; from pending it can take: claim"):
        board.complete(a.id)
    for verb in (board.unclaim, board.reopen):
        with pytest.raises(Busy, match="is pending"):
            verb(a.id)
    with pytest.raises(Busy, match="cannot take approve"):
        board.approve(a.id, Who("rev", "rev"))
    board.claim(a.id, Who("bot1", "bot1"))
    board.fail(a.id, "the code is gone")
    assert board.get(a.id).status is Status.FAILED and board.get(a.id).result == "the code is gone"
    board.reopen(a.id)
    assert board.get(a.id).status is Status.PENDING and board.get(a.id).assigned_to == ""


def test_approval_never_by_the_one_who_did_the_work(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Security fix", "developer", "d", requires_approval=True)
    board.claim(a.id, Who("bot1", "bot1"))
    assert board.complete(a.id, "patched").status is Status.PENDING_APPROVAL
    with pytest.raises(NotPermitted, match="bot1 did the work on bead security-fix-001; someone else must approve it"):
        board.approve(a.id, Who("bot1", "bot1"))
    board.reject(a.id, "no test for the fix", Who("rev", "rev"))
    bead = board.get(a.id)
    assert bead.status is Status.IN_PROGRESS and bead.review == "no test for the fix" and bead.assigned_to == "bot1"
    board.complete(a.id, "patched, with a test")
    board.approve(a.id, Who("human"))
    assert board.get(a.id).status is Status.COMPLETED and board.get(a.id).approved_by == "human"


def test_overlapping_owns_waits_for_the_other_bead(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Write docs", "writer", "d", owns=["docs/"])
    b = board.new("Fix hello page", "writer", "d", owns=["docs/hello.md"])
    c = board.new("Fix code", "developer", "d", owns=["src/*.py"])
    board.claim(a.id, Who("bot1", "bot1"))
    with pytest.raises(Busy, match="owns docs/hello.md, which overlaps docs/ owned by write-docs-001 \\(in progress, claimed by bot1\\)"):
        board.claim(b.id, Who("bot2", "bot2"))
    board.claim(c.id, Who("bot2", "bot2"))  # disjoint: fine
    board.complete(a.id)
    board.claim(b.id, Who("rev", "rev"))


def test_a_bead_goes_back_to_pending_when_its_session_is_gone(tmp_path):
    board, _, journal, _, _ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    b = board.new("Other", "researcher", "r")
    board.claim(a.id, Who("bot1", "bot1"))
    board.claim(b.id, Who("bot2", "bot2"))
    board.bus.publish(SessionEnded("bot1", "killed"))
    assert board.get(a.id).status is Status.PENDING and board.get(a.id).assigned_to == ""
    assert board.get(b.id).assigned_to == "bot2"
    assert f"bead:{a.id} release pending session bot1 killed" in journal.text()


def test_a_lease_runs_out_back_to_pending(tmp_path):
    clock = Clock()
    board, *_ = make(tmp_path, clock)
    a = board.new("Research auth", "researcher", "r")
    board.claim(a.id, Who("glenda"), "outside-worker", lease=600)
    assert board.expire_leases() == clock.now + 600
    clock.now += 300
    board.claim(a.id, Who("glenda"), "outside-worker", lease=600)  # the holder renews
    clock.now += 599
    assert board.expire_leases() is not None and board.get(a.id).status is Status.IN_PROGRESS
    clock.now += 2
    assert board.expire_leases() is None and board.get(a.id).status is Status.PENDING


def test_a_convoy_completes_with_its_last_bead_and_never_while_empty(tmp_path):
    board, convoys, journal, history, _ = make(tmp_path)
    c = convoys.new("Implement auth system", "Add OAuth and session management")
    assert c.id == "impl-auth-001"
    with pytest.raises(Busy, match="has no beads"):
        convoys.complete(c.id)
    a = board.new("Research auth", "researcher", "r", convoy=c.id)
    b = board.new("Implement OAuth", "developer", "d")
    convoys.add_bead(c.id, b.id)
    assert [x.id for x in convoys.beads_of(c.id)] == [a.id, b.id] and convoys.progress(c.id) == "0/2 completed"
    board.claim(a.id, Who("bot1", "bot1"))
    assert convoys.get(c.id).status == "in_progress"
    board.complete(a.id)
    assert convoys.get(c.id).status == "in_progress"
    board.claim(b.id, Who("bot2", "bot2"))
    board.complete(b.id)  # the convoy completes in this same call, before it returns
    assert convoys.get(c.id).status == "completed" and convoys.progress(c.id) == "2/2 completed"
    assert journal.text().count(f"convoy:{c.id} complete completed") == 1
    with pytest.raises(Busy, match="completed: it takes no more beads"):
        board.new("Late", "developer", "d", convoy=c.id)


def test_a_comment_added_by_hand_survives_ten_updates(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    path = tmp_path / "state" / "beads" / f"{a.id}.toml"
    path.write_text("# kept by a person: ask Ann before changing this\n" + path.read_text().replace("role =", "# the role\nrole ="))
    for i in range(10):
        board.set_text(a.id, "description", f"version {i}")
    text = path.read_text()
    assert "# kept by a person: ask Ann" in text and "# the role" in text and 'description = "version 9"' in text
    again, *_ = make(tmp_path)
    assert again.get(a.id).description == "version 9"


def test_a_file_broken_by_hand_is_reported_and_never_overwritten(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    b = board.new("Other", "researcher", "r")
    path = tmp_path / "state" / "beads" / f"{a.id}.toml"
    path.write_text("[bead\nthis is broken")
    with pytest.raises(Exception, match="no longer parses.*fix it by hand"):
        board.set_text(a.id, "description", "x")
    assert path.read_text() == "[bead\nthis is broken"
    again, _, _, _, problems = make(tmp_path)
    assert any(a.id in p and "cannot be used" in p for p in problems), problems
    with pytest.raises(Busy, match="file is broken"):
        again.claim(a.id, Who("bot1", "bot1"))
    assert again.new("Research auth", "researcher", "r").id == "research-auth-003"  # its id is not reused
    assert again.get(b.id).title == "Other"


def test_beads_read_from_files_each_hold_lists_of_their_own(tmp_path):
    """A bead is made from its validated model's fields as they are (model.py): a default list shared by
    two beads would let a change to one show in the other."""
    make(tmp_path)
    for bead_id in ("a-001", "b-002"):  # written by a person: no depends_on, no owns (their defaults)
        (tmp_path / "state" / "beads" / f"{bead_id}.toml").write_text(
            f'[bead]\nid = "{bead_id}"\ntitle = "T"\nrole = "r"\n')
    board, _, _, _, problems = make(tmp_path)
    a, b = board.get("a-001"), board.get("b-002")
    assert not problems and a.depends_on == b.depends_on == [] and a.owns == b.owns == []
    assert a.depends_on is not b.depends_on and a.owns is not b.owns


def test_a_refused_disk_write_changes_nothing(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    path = tmp_path / "state" / "beads" / f"{a.id}.toml"
    path.unlink()
    path.mkdir()  # the atomic rename cannot replace a directory
    with pytest.raises(Exception, match=f"cannot save bead {a.id}.*nothing was changed"):
        board.claim(a.id, Who("bot1", "bot1"))
    assert board.get(a.id).status is Status.PENDING


def test_bad_input_names_the_problem(tmp_path):
    board, *_ = make(tmp_path)
    with pytest.raises(NotFound, match="dependency 'nope-009' is not a bead"):
        board.new("X", "dev", "d", ["nope-009"])
    with pytest.raises(InvalidRequest, match="at most 200"):
        board.new("x" * 201, "dev", "d")
    with pytest.raises(InvalidRequest, match="role 'a b'"):
        board.new("X", "a b", "d")
    with pytest.raises(InvalidRequest, match="control character"):
        board.new("X\ny", "dev", "d")
    with pytest.raises(InvalidRequest, match="relative to the work tree"):
        board.new("X", "dev", "d", owns=["/etc/passwd"])
    with pytest.raises(NotFound, match="no bead 'ghost-001'"):
        board.claim("ghost-001", Who("bot1", "bot1"))
    assert board.all() == []


def test_a_cycle_made_by_hand_is_reported_by_name(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("First", "dev", "d")
    b = board.new("Second", "dev", "d", [a.id])
    path = tmp_path / "state" / "beads" / f"{a.id}.toml"
    path.write_text(path.read_text().replace("depends_on = []", f'depends_on = ["{b.id}"]'))
    again, _, _, _, problems = make(tmp_path)
    assert f"dependency cycle: {a.id} -> {b.id} -> {a.id}" in "\n".join(problems)
    assert again.ready() == []
    assert "blocked" in render_graph({x.id: x for x in again.all()})


def test_the_graph_groups_beads_into_waves(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Research auth", "researcher", "r")
    b = board.new("Implement OAuth", "developer", "d", [a.id])
    c = board.new("Write tests", "tester", "t", [a.id])
    d = board.new("Review security", "reviewer", "v", [b.id, c.id])
    text = render_graph({x.id: x for x in board.all()})
    assert text.splitlines() == [
        "wave 1", f"  {a.id} pending  Research auth",
        "wave 2", f"  {b.id} pending  Implement OAuth  <- {a.id}", f"  {c.id} pending  Write tests  <- {a.id}",
        "wave 3", f"  {d.id} pending  Review security  <- {b.id} {c.id}",
    ]


def test_files_are_private_and_history_messages_say_what_happened(tmp_path):
    board, _, _, history, _ = make(tmp_path)
    a = board.new("Research auth system", "researcher", "r")
    board.claim(a.id, Who("bot1", "bot1"))
    board.complete(a.id)
    assert history == ["Created: Research auth system (research-auth-001, role researcher)",
                       "Claimed: research-auth-001 by bot1", "Completed: Research auth system (research-auth-001)"]
    path = tmp_path / "state" / "beads" / f"{a.id}.toml"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_removing_the_last_open_bead_completes_the_convoy_and_a_closed_one_keeps_its_beads(tmp_path):
    board, convoys, *_ = make(tmp_path)
    c = convoys.new("Auth", "goal")
    a = board.new("Done one", "dev", "d", convoy=c.id)
    b = board.new("Open one", "dev", "d", convoy=c.id)
    board.claim(a.id, Who("bot1", "bot1"))
    board.complete(a.id)
    convoys.remove_bead(c.id, b.id)
    assert convoys.get(c.id).status == "completed" and convoys.progress(c.id) == "1/1 completed"
    with pytest.raises(Busy, match="is completed: its beads stay"):
        convoys.remove_bead(c.id, a.id)


def test_a_convoy_write_that_fails_does_not_undo_or_misreport_its_bead(tmp_path):
    board, convoys, journal, *_ = make(tmp_path)
    c = convoys.new("Auth", "goal")
    a = board.new("Only", "dev", "d", convoy=c.id)
    board.claim(a.id, Who("bot1", "bot1"))
    path = tmp_path / "state" / "convoys" / f"{c.id}.toml"
    path.unlink()
    path.mkdir()  # the convoy's file cannot be replaced
    board.complete(a.id)  # the bead's change stands, and says so
    assert board.get(a.id).status is Status.COMPLETED
    assert f"convoy {c.id} is re-checked at the next start" in journal.text()
    path.rmdir()
    convoys.recheck()  # what the next start does
    assert convoys.get(c.id).status == "completed"


def test_a_lease_taken_before_a_restart_runs_out_after_it_and_only_leased_beads_are_released(tmp_path):
    clock = Clock()
    board, *_ = make(tmp_path, clock)
    a, b, c = (board.new(f"Task {i}", "dev", "d") for i in range(3))
    board.claim(a.id, Who("glenda"), "outside-worker", lease=600)
    board.claim(b.id, Who("glenda"), "other", lease=60)
    board.unclaim(b.id)  # no lease any more: nothing to run out
    again, *_ = make(tmp_path, clock)
    clock.now += 601
    assert again.expire_leases() is None
    assert [again.get(x.id).status for x in (a, b, c)] == [Status.PENDING] * 3


def test_a_session_that_ends_releases_its_beads_even_under_a_lease(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Task", "dev", "d")
    board.claim(a.id, Who("glenda"), "bot1", lease=600)
    board.bus.publish(SessionEnded("bot1", "killed"))
    assert board.get(a.id).status is Status.PENDING


def test_a_lease_for_a_name_that_is_no_session_survives_a_session_of_that_name_ending(tmp_path):
    board, *_ = make(tmp_path)
    a = board.new("Task", "dev", "d")
    board.claim(a.id, Who("glenda"), "alice", lease=600)  # alice is no session
    board.bus.publish(SessionEnded("alice", "stopped"))  # a session named alice, made later, ends
    assert board.get(a.id).status is Status.IN_PROGRESS and board.get(a.id).assigned_to == "alice"


def test_a_convoy_that_could_not_follow_a_reopened_bead_is_brought_back_at_the_next_start(tmp_path):
    board, convoys, *_ = make(tmp_path)
    c = convoys.new("Auth", "goal")
    a = board.new("Only", "dev", "d", convoy=c.id)
    board.claim(a.id, Who("bot1", "bot1"))
    board.complete(a.id)
    assert convoys.get(c.id).status == "completed"
    path = tmp_path / "state" / "convoys" / f"{c.id}.toml"
    path.unlink()
    path.mkdir()
    board.reopen(a.id)  # the convoy cannot be written: it stays completed for now
    assert convoys.get(c.id).status == "completed"
    path.rmdir()
    convoys.recheck()
    assert convoys.get(c.id).status == "in_progress"


def test_a_completed_beads_later_changes_do_not_complete_a_convoy_it_joined_completed(tmp_path):
    board, convoys, *_ = make(tmp_path)
    a = board.new("Done before", "dev", "d")
    board.claim(a.id, Who("bot1", "bot1"))
    board.complete(a.id)
    c = convoys.new("Auth", "goal")
    convoys.add_bead(c.id, a.id)
    board.set_text(a.id, "result", "notes.md")  # a change of the bead, but no completion
    assert convoys.get(c.id).status == "planning" and convoys.progress(c.id) == "1/1 completed"
    convoys.recheck()  # what the next start does
    assert convoys.get(c.id).status == "planning"
    convoys.complete(c.id)  # by hand
    assert convoys.get(c.id).status == "completed"
