"""A round stages only its rows' files and commits with plumbing (d47279a): what that must not lose."""

from __future__ import annotations

import os

from anvilfs.storage import GitHistory, PrivateDir
from harness.git_history import DEADLINE, git, pending, reporter, subjects, within_real_seconds, write_bead


async def test_a_file_whose_message_failed_during_a_scan_is_still_found_by_the_next_round(started, state):
    """A job whose file reached the disk but whose message did not (lost()) asks for a whole scan. If it
    says so while a scan is running, that scan may have missed the file: the ask must not be forgotten."""
    root, history = await started()
    write_bead(root, "a")
    history.record("Created: a", f"{state}/beads/a.toml")
    await within_real_seconds(DEADLINE, "the first commit", history.wait_committed)
    history._scanned_at = None  # the next round scans (as after SCAN_EVERY)
    real = history._repo.git

    async def lost_during_the_scan(*args, **kwargs):
        out = await real(*args, **kwargs)
        if args[0] == "add":  # the scan has looked; now a job's file lands and its message is refused
            write_bead(root, "c")
            history.lost("Created: c", OSError(28, "No space left on device"))
        return out

    history._repo.git = lost_during_the_scan
    write_bead(root, "b")
    history.record("Created: b", f"{state}/beads/b.toml")
    await within_real_seconds(DEADLINE, "b's commit (the scanning round)", history.wait_committed)
    history._repo.git = real
    write_bead(root, "d")
    history.record("Created: d", f"{state}/beads/d.toml")
    await within_real_seconds(DEADLINE, "d's commit", history.wait_committed)
    assert "beads/c.toml" in git(state, "ls-tree", "--name-only", "HEAD", "beads/").split(), \
        "c's file (its message refused during a scan) is not in the next round's commit"
async def test_a_blob_lost_by_a_crash_fails_the_first_round_instead_of_being_committed_missing(state, db):
    """After a crash the index may name a blob the disk lost (git flushes no object directory). `git commit`
    refused such a tree; write-tree --missing-ok commits it, and the history can no longer be read or
    gc'd. The first commit of a run looks for every blob."""
    root = PrivateDir(state)
    errors, reported, on_error = reporter()
    history = GitHistory(root, db, on_error=on_error)
    try:
        write_bead(root, "a")
        history.record("Created: a", f"{state}/beads/a.toml")
        await history.flush()
        # a killed round: b staged, not committed; then its blob is lost
        write_bead(root, "b", "title = 'b, whose blob is lost'\n")
        os.utime(state / "beads" / "b.toml", (1.7e9, 1.7e9))  # older than the index: not racily clean
        git(state, "update-index", "--add", "--", "beads/b.toml")
        blob = git(state, "rev-parse", ":beads/b.toml").strip()
        os.unlink(state / ".git" / "objects" / blob[:2] / blob[2:])
    finally:
        history.close()
    root = PrivateDir(state)
    history = GitHistory(root, db, on_error=on_error)
    try:
        write_bead(root, "c")
        history.record("Created: c", f"{state}/beads/c.toml")
        refused = None
        try:
            await history.flush()
        except OSError as exc:
            refused = exc
        missing = [line for line in git(state, "rev-list", "--objects", "--missing=print", "HEAD").splitlines()
                   if line.startswith("?")]
        assert not missing, f"a commit names a blob that is not there: {subjects(state)}, {missing}"
        assert refused is not None and "invalid object" in str(refused), refused
        assert pending(db) == ["Created: c"]  # it waits: nothing answered is lost
    finally:
        history.close()


async def test_a_message_without_a_file_does_not_inherit_the_file_of_a_rolled_back_row(started, state, db):
    """A job that failed after keep() rolled its row back, and the next row takes the same seq. A message
    recorded alone (no file named) must make its round scan, not stage the file the rolled-back row named."""
    root, history = await started()

    def kept_then_failed(conn):
        history.keep(conn, "Created: a", f"{state}/beads/a.toml")
        raise OSError(5, "the job fails after keeping its message")

    failed = db.call(kept_then_failed)
    history.follow(failed)
    await history.flush()  # the failed job's round (a whole scan); its seq is free again
    write_bead(root, "b")
    history.record("Created: b")  # its file written already, not named
    await history.flush()
    assert git(state, "ls-tree", "--name-only", "HEAD", "beads/").split() == ["beads/b.toml"], \
        "b's round staged the rolled-back row's file instead of scanning"
