"""A round stages only its rows' files and commits with plumbing (d47279a): what that must not lose."""

from __future__ import annotations

import os

import trio

from anvilfs.storage import GitHistory, PrivateDir
from anvilfs.storage.gitrepo import MAINTAIN_EVERY, GitFailed
from anvilfs.storage.history import SCAN_EVERY
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


async def test_a_round_adds_the_files_its_changes_wrote_and_a_scan_now_and_then_finds_the_rest(
        started, state, autojump_clock):
    """A round stages only its changes' files (a scan of 10,000 beads stats them all, each round: issue 32
    item 6); a file edited by hand is committed at the first round SCAN_EVERY seconds after the last scan."""
    root, history = await started()
    write_bead(root, "a")
    history.record("Created: a", f"{state}/beads/a.toml")  # the first round scans: what a stopped server left
    await within_real_seconds(DEADLINE, "the first commit", history.wait_committed)
    write_bead(root, "a", "title = 'edited by hand'\n")
    write_bead(root, "b")
    history.record("Created: b", f"{state}/beads/b.toml")
    await within_real_seconds(DEADLINE, "b's commit", history.wait_committed)
    assert git(state, "show", "HEAD:beads/a.toml") == "title = 'x'\n"  # not looked at: b's round added b
    assert git(state, "show", "HEAD:beads/b.toml") == "title = 'x'\n"
    await trio.sleep(SCAN_EVERY)
    write_bead(root, "c")
    history.record("Created: c", f"{state}/beads/c.toml")
    await within_real_seconds(DEADLINE, "c's commit", history.wait_committed)
    assert git(state, "show", "HEAD:beads/a.toml") == "title = 'edited by hand'\n"
    assert git(state, "ls-tree", "--name-only", "HEAD", "beads/").split() == ["beads/a.toml", "beads/b.toml", "beads/c.toml"]
    assert subjects(state) == ["Created: c", "Created: b", "Created: a"]


async def test_after_a_failed_round_the_next_scans_everything(started, state, autojump_clock):
    errors, reported, on_error = reporter()
    root, history = await started(on_error=on_error, retry_delay=1.0)
    write_bead(root, "a")
    history.record("Created: a", f"{state}/beads/a.toml")
    await within_real_seconds(DEADLINE, "the first commit", history.wait_committed)
    lock = state / ".git" / "index.lock"
    lock.write_bytes(b"")  # another git's lock: the round fails, as on a full disk
    write_bead(root, "a", "title = 'edited by hand'\n")
    write_bead(root, "b")
    history.record("Created: b", f"{state}/beads/b.toml")
    await within_real_seconds(DEADLINE, "the failed round's report", reported.wait)
    lock.unlink()
    await within_real_seconds(DEADLINE, "the retried commit", history.wait_committed)
    assert git(state, "show", "HEAD:beads/a.toml") == "title = 'edited by hand'\n"
    assert subjects(state) == ["Created: b", "Created: a"]


async def test_git_maintenance_runs_at_the_first_commit_and_every_so_many_after(started, state, monkeypatch):
    """As `git commit` would (its automatic gc): the plumbing that commits does not, so the history does."""
    root, history = await started()
    seen = []
    real = history._repo.git

    async def noting(*args, **kwargs):
        seen.append(args[0])
        return await real(*args, **kwargs)

    monkeypatch.setattr(history._repo, "git", noting)
    for i in range(MAINTAIN_EVERY + 1):
        write_bead(root, f"b{i}")
        history.record(f"Created: b{i}", f"{state}/beads/b{i}.toml")
        await history.flush()
    assert seen.count("update-ref") == MAINTAIN_EVERY + 1 and seen.count("maintenance") == 2, seen
    assert seen[seen.index("update-ref") + 1] == "maintenance"


async def test_a_failed_maintenance_is_reported_and_fails_no_round(started, state, db, monkeypatch):
    """git's gc after a commit may fail (a full disk); the commit is made and on disk by then, so the round
    is not failed for it (`git commit` ignored it too): reported, the rows deleted."""
    errors, _, on_error = reporter()
    root, history = await started(on_error=on_error)
    real = history._repo.git

    async def failing_maintenance(*args, **kwargs):
        if args[0] == "maintenance":
            raise GitFailed(28, "git maintenance failed: No space left on device")
        return await real(*args, **kwargs)

    monkeypatch.setattr(history._repo, "git", failing_maintenance)
    write_bead(root, "a")
    history.record("Created: a", f"{state}/beads/a.toml")
    await history.flush()
    assert subjects(state) == ["Created: a"] and pending(db) == []
    assert len(errors) == 1 and "maintenance failed" in errors[0] and "the commit is made" in errors[0], errors


async def test_a_commit_made_by_hand_meanwhile_is_kept_and_the_messages_follow_it(started, state, db, autojump_clock):
    """The branch moves only from the commit the history last made: a commit someone made by hand since fails
    that round (reported, the messages wait), and the next round commits on top of it: nothing is lost."""
    errors, reported, on_error = reporter()
    root, history = await started(on_error=on_error, retry_delay=1.0)
    write_bead(root, "a")
    history.record("Created: a")
    await within_real_seconds(DEADLINE, "the first commit", history.wait_committed)
    git(state, "-c", "user.name=hand", "-c", "user.email=hand@localhost", "commit", "-q", "--allow-empty", "-m", "By hand")
    write_bead(root, "b")
    history.record("Created: b")
    await within_real_seconds(DEADLINE, "the refused round's report", reported.wait)
    assert "git update-ref failed" in errors[0], errors
    await within_real_seconds(DEADLINE, "the retried commit", history.wait_committed)
    assert subjects(state) == ["Created: b", "By hand", "Created: a"]
    assert git(state, "log", "--format=%an <%ae> %cn", "-1") == "anvilfs <anvilfs@localhost> anvilfs\n"
    assert git(state, "show", "HEAD:beads/b.toml") == "title = 'x'\n"
    assert pending(db) == []


async def test_a_round_of_more_paths_than_a_command_line_holds_is_staged_whole(state, db):
    """A burst's paths go to `git update-index` on stdin: 9,000 names of 250 bytes (2.3 MB) passed the
    kernel's limit on a command line (E2BIG), and the round failed until a whole scan."""
    root = PrivateDir(state)
    history = GitHistory(root, db)
    try:
        await history.flush()  # the first round: a whole scan
        names = [f"{i:05d}-{'x' * 234}" for i in range(9000)]
        for name in names:
            (state / "beads" / f"{name}.toml").write_text("title = 'x'\n")  # as the writer leaves them
        commits = [history.record(f"Created: {name[:5]}", f"{state}/beads/{name}.toml") for name in names]
        with trio.fail_after(DEADLINE):
            await commits[-1].wait()
        await history.flush()
        assert len(git(state, "ls-tree", "--name-only", "HEAD", "beads/").split()) == 9000
        assert pending(db) == []
    finally:
        history.close()


async def test_ignore_rules_a_person_left_in_the_state_directory_hide_no_bead_from_history(started, state):
    """core.excludesFile is /dev/null, but a .gitignore in the state directory or .git/info/exclude still
    applied to the whole scans: a bead file they matched never reached history. They hold nothing now."""
    root, history = await started()
    (state / ".gitignore").write_text("*.toml\n")
    (state / ".git" / "info").mkdir(exist_ok=True)
    (state / ".git" / "info" / "exclude").write_text("beads/\n")
    write_bead(root, "a")
    history.record("Created: a")  # no file named: the round scans everything
    await history.flush()
    assert git(state, "ls-tree", "--name-only", "HEAD", "beads/").split() == ["beads/a.toml"]
    assert subjects(state) == ["Created: a"]
