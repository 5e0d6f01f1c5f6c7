"""The one-release importer (storage/history_import.py): the history journal of an anvilfs before the database
(up to 0dec9af; its format made by tests/harness/old_history.py), read once into STATE/anvilfs.db at start."""

from __future__ import annotations

from anvilfs.storage import PrivateDir
from anvilfs.storage.history import commit_message
from harness.apps import until
from harness.git_history import git, make_history, messages_in_history, pending, subjects, write_bead
from harness.old_history import COMMITTING, JOURNAL, old_records, write_old


async def test_an_old_journal_and_its_batch_under_way_are_committed_once_in_their_order(started, state, db):
    root = PrivateDir(state)
    make_history(state)
    for name in "abc":
        write_bead(root, name)
    write_old(state, COMMITTING, old_records("old", ["Created: a", "Created: b"]))  # the old server died in git
    write_old(state, JOURNAL, old_records("old", ["Created: c"], first=3))
    errors = []
    await started(on_error=errors.append)
    assert subjects(state) == ["3 changes: Created: a, Created: b, Created: c"]
    assert not (state / JOURNAL).exists() and not (state / COMMITTING).exists()
    kept = {path.name for path in (state / "imported").glob("*/history.*")}
    assert kept == {JOURNAL, COMMITTING}  # moved away for a person, as the other imports' files
    assert pending(db) == [] and errors == []
    assert git(state, "status", "--porcelain", "--", "beads") == ""


async def test_a_batch_the_old_server_had_committed_is_not_committed_again(started, state):
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")
    git(state, "add", "beads")
    batch = old_records("old", ["Created: a", "Updated: a"])
    git(state, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--cleanup=verbatim",
        "-m", commit_message(("Created: a", "Updated: a"), "old.2"))
    write_old(state, COMMITTING, batch)  # died after the commit, before removing what it committed
    write_bead(root, "b")
    write_old(state, JOURNAL, old_records("old", ["Created: b"], first=3))
    await started()
    assert messages_in_history(state) == ["Created: b", "Created: a", "Updated: a"]


async def test_a_start_killed_after_the_import_before_the_files_went_imports_nothing_twice(started, state, db):
    """The import's rows and its marks are one transaction; the files go after it. Found again with
    their marks matching (the start was killed between the two), they are moved, not imported twice."""
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")
    journal = old_records("old", ["Created: a"])
    write_old(state, JOURNAL, journal)
    _, history = await started()
    history.close()
    write_old(state, JOURNAL, journal)  # as if the removal had not happened
    await started()
    assert messages_in_history(state) == ["Created: a"]
    assert not (state / JOURNAL).exists()


async def test_lines_that_are_not_records_are_said_and_skipped(started, state):
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")
    write_old(state, JOURNAL, old_records("old", ["Created: a"]) + b"garbage\n" + b'["old.3", "Crea')
    errors = []
    await started(on_error=errors.append)
    assert messages_in_history(state) == ["Created: a"]
    assert len(errors) == 2 and "not a record: b'garbage'" in errors[0] and "cut off by a crash" in errors[1]


async def test_an_import_whose_files_cannot_be_moved_holds_no_commit_back_and_a_later_round_moves_them(
        started, state, db):
    """The move of the old files refused (a file where STATE/imported goes): said once, the imported messages
    committed all the same, and the move done by a later round of the same run once it can be."""
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")
    write_old(state, JOURNAL, old_records("old", ["Created: a"]))
    (state / "imported").write_text("in the way: where the old files go\n")
    errors = []
    _, history = await started(on_error=errors.append, retry_delay=0.01)
    assert messages_in_history(state) == ["Created: a"] and pending(db) == []
    assert len(errors) == 1 and "cannot move the imported history.journal aside" in errors[0], errors
    (state / "imported").unlink()
    write_bead(root, "b")
    await history.record("Created: b", str(state / "beads" / "b.toml")).wait()  # a change: the next round
    await until(lambda: not (state / JOURNAL).exists(), "the old journal moved aside by a later round")
    await until(lambda: pending(db) == [], "the new message committed")
    assert sorted(messages_in_history(state)) == ["Created: a", "Created: b"] and len(errors) == 1, errors

