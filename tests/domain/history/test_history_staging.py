"""A round stages only its rows' files and commits with plumbing (d47279a): what that must not lose."""

from __future__ import annotations


from harness.git_history import DEADLINE, git, within_real_seconds, write_bead


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
