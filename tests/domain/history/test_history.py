"""The git history of the state directory (anvilfs/storage/history.py), with real git throughout."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest
import trio

from anvilfs.storage import GitHistory, PrivateDir, StorageError
from anvilfs.storage.gitrepo import GitRepository
from anvilfs.storage.history import RECOVERED, commit_message
from anvilfs.storage.history_import import JOURNAL
from harness.git_history import (DEADLINE, git, make_history, messages_in_history, pending, subjects,
                                 within_real_seconds, write_bead)

# ------------------------------------------------------------------ committing


async def test_a_recorded_change_is_committed_with_its_message_by_the_running_task(started, state, db):
    root, history = await started()
    write_bead(root, "research-auth-001")
    history.record("Created: research-auth-001 Research auth system")
    with trio.fail_after(DEADLINE):
        await history.wait_committed()
    assert subjects(state) == ["Created: research-auth-001 Research auth system"]
    assert git(state, "show", "HEAD:beads/research-auth-001.toml") == "title = 'x'\n"
    assert pending(db) == []
    assert stat.S_IMODE(os.lstat(state).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(state / ".git").st_mode) == 0o700


async def test_changes_in_one_moment_share_a_commit_and_a_later_one_gets_its_own(started, state, autojump_clock):
    root, history = await started(group_delay=0.1)
    write_bead(root, "a")
    history.record("Created: a")
    await trio.sleep(0.05)  # virtual time, inside the grouping moment
    write_bead(root, "b")
    history.record("Created: b")
    await within_real_seconds(DEADLINE, "the grouped commit", history.wait_committed)
    write_bead(root, "a", "status = 'completed'\n")
    history.record("Completed: a")
    await within_real_seconds(DEADLINE, "the later commit", history.wait_committed)
    assert subjects(state) == ["Completed: a", "2 changes: Created: a, Created: b"]
    assert messages_in_history(state) == ["Completed: a", "Created: a", "Created: b"]


async def test_under_a_steady_stream_of_changes_git_rests_as_long_as_its_last_round_took(
        started, autojump_clock, monkeypatch):
    """A round of git on a big tree takes long (0.1-0.5 s on 10,000 beads); with a change every 50 ms a
    round every group_delay kept git busy all the time. Each round now waits as long as the last took."""
    _, history = await started(group_delay=0.1)
    began = []

    async def a_slow_round() -> bool:  # what git does is the other tests'; here only how long it takes
        began.append(trio.current_time())
        await trio.sleep(1.0)
        return True

    monkeypatch.setattr(history, "_commit_reporting", a_slow_round)
    for i in range(200):  # 10 virtual seconds of a change every 50 ms
        history.record(f"Changed: {i}")
        await trio.sleep(0.05)
    gaps = [b - a for a, b in zip(began, began[1:])]
    assert len(gaps) >= 3 and min(gaps) > 1.99, gaps  # 1 s of git, then at least 1 s of rest (was 1.1 s)


async def test_git_runs_in_the_background_but_a_flush_does_not(started, state):
    """The history's git is background work: it runs niced, 10 more than the server (issue 32 item 6); a
    clean stop's flush waits for it, so that one runs as any task. git runs an alias that is `nice`, which
    prints its niceness."""
    _, history = await started()
    repo = history._repo
    background = await repo.git("-c", "alias.niceness=!nice", "niceness")
    repo.urgent = True
    try:
        urgent = await repo.git("-c", "alias.niceness=!nice", "niceness")
    finally:
        repo.urgent = False
    assert (int(background), int(urgent)) == (min(os.nice(0) + 10, 19), os.nice(0)), (background, urgent)


async def test_a_flush_runs_git_as_any_task_and_the_rounds_do_not(started, monkeypatch):
    _, history = await started()
    seen = []
    real = history._repo.git

    async def noting(*args, **kwargs):
        seen.append((args[0], history._repo.urgent))
        return await real(*args, **kwargs)

    monkeypatch.setattr(history._repo, "git", noting)
    await history.flush()
    assert seen and all(urgent for _, urgent in seen), seen
    assert history._repo.urgent is False
    seen.clear()
    history.record("Changed: x")
    await within_real_seconds(DEADLINE, "the round's commit", history.wait_committed)
    assert seen and not any(urgent for _, urgent in seen), seen


async def test_only_the_tracked_directories_are_committed(started, state):
    root, history = await started()
    root.subdir("sessions").write_atomic("bot1.toml", b"secret = 1\n")
    root.write_atomic("token", b"t0ps3cret\n")
    write_bead(root, "a")
    root.subdir("beads").write_atomic(".a.toml.0123.tmp", b"half a write\n")  # as if a write were under way
    history.record("Created: a")
    await history.flush()
    assert git(state, "ls-tree", "-r", "--name-only", "HEAD").split() == ["beads/a.toml"]


async def test_nothing_to_commit_is_not_an_error(started, state):
    errors = []
    root, history = await started(on_error=errors.append)
    await history.flush()
    await history.flush()
    assert errors == [] and messages_in_history(state) == []


def test_the_subject_of_a_group_counts_and_starts_the_messages_and_the_body_has_them_all():
    many = tuple(f"Created: bead-{i:03d} with a long enough title" for i in range(10))
    subject, _, body = commit_message(many, "id.10").partition("\n\n")
    assert subject.startswith("10 changes: Created: bead-000 with a long enough title, Created: bead-001")
    assert subject.endswith(", ...") and len(subject) <= 200
    assert body.splitlines() == [*many, "", "Anvilfs-Batch: id.10"]
    assert commit_message(("Claimed: x by bot1",), "id.1") == "Claimed: x by bot1\n\nAnvilfs-Batch: id.1\n"


async def test_a_message_with_a_line_break_stays_one_line(started, state):
    root, history = await started()
    write_bead(root, "a")
    history.record("Created: a\nForged: line")
    await history.flush()
    assert subjects(state) == ["Created: a\\nForged: line"]


# ------------------------------------------------------------------ what a killed server leaves


async def test_lock_files_left_by_a_killed_git_are_removed_and_commits_go_on(state, db):
    make_history(state)
    (state / ".git" / "index.lock").write_bytes(b"")
    (state / ".git" / "refs" / "heads" / "main.lock").write_bytes(b"")
    root = PrivateDir(state)
    history = GitHistory(root, db)
    try:
        assert history.stale_locks_removed == ("index.lock", "refs/heads/main.lock")
        write_bead(root, "a")
        history.record("Created: a")
        await history.flush()
    finally:
        history.close()
    assert subjects(state) == ["Created: a"]


async def test_a_message_left_pending_by_a_killed_server_is_committed_at_start(started, state, db):
    root = PrivateDir(state)
    killed = GitHistory(root, db)
    write_bead(root, "a")
    with trio.fail_after(DEADLINE):
        await killed.record("Created: a").wait()  # answered: on disk in the database
    killed.close()  # as if killed before its run() committed
    assert pending(db) == ["Created: a"]
    await started()
    assert subjects(state) == ["Created: a"]
    assert pending(db) == []


async def _died_after_committing_before_deleting(state, db) -> PrivateDir:
    """A server's history that committed "Created: a" and died before deleting its row."""
    root = PrivateDir(state)
    killed = GitHistory(root, db)
    write_bead(root, "a")
    await killed.record("Created: a").wait()
    [(seq,)] = db.read("SELECT seq FROM history_pending")
    await killed.flush()
    killed.close()
    await db.execute("INSERT INTO history_pending (seq, message) VALUES (?, ?)", (seq, "Created: a")).wait()
    return root


async def test_a_batch_already_committed_when_the_server_died_is_not_committed_again(started, state, db):
    root = await _died_after_committing_before_deleting(state, db)
    _, history = await started()
    write_bead(root, "b")
    history.record("Created: b")
    await history.flush()
    assert subjects(state) == ["Created: b", "Created: a"]
    assert pending(db) == []


async def test_rows_a_killed_server_had_committed_are_deleted_only_once_the_branch_is_flushed(
        started, state, db, monkeypatch):
    """The ref a killed round renamed into place may not be on disk: the trailer that says its rows are in
    history is believed only once the branch's directory is flushed, else a power cut could lose both."""
    await _died_after_committing_before_deleting(state, db)
    flushed_with = []
    real = GitRepository.sync_branch
    monkeypatch.setattr(GitRepository, "sync_branch", lambda self: flushed_with.append(pending(db)) or real(self))
    await started()
    assert flushed_with and flushed_with[0] == ["Created: a"], flushed_with  # flushed while the rows were there
    assert pending(db) == [] and subjects(state) == ["Created: a"]


async def test_a_batch_of_another_database_is_not_taken_for_this_ones(started, state, db):
    """A database moved away (anvilfs makes a new one): its batch numbers start again, and the last
    commit's trailer, from the old one, must not make the new one's messages look committed."""
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")
    message = commit_message(("Created: a",), "0123456789ab.5")  # rows 1..5 of another database
    git(state, "add", "beads")
    git(state, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--cleanup=verbatim", "-m", message)
    killed = GitHistory(root, db)
    write_bead(root, "b")
    with trio.fail_after(DEADLINE):
        await killed.record("Created: b").wait()
    killed.close()
    await started()
    assert subjects(state) == ["Created: b", "Created: a"]


async def test_changes_no_message_was_recorded_for_are_committed_as_recovered_at_start(started, state):
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")  # died between the write and its record()
    await started()
    assert subjects(state) == [RECOVERED]
    assert "A\tbeads/a.toml" in git(state, "log", "-1", "--format=%b")


async def test_a_record_cut_off_by_a_crash_does_not_swallow_the_next_one(started, state):
    """In the journal of an anvilfs before the database (history_import.py), imported at the first start."""
    root = PrivateDir(state)
    make_history(state)
    root.write_atomic(JOURNAL, b'["old.1", "Created: a"]\n["old.2", "Crea')  # a power cut in mid-append
    errors = []
    _, history = await started(on_error=errors.append)
    write_bead(root, "b")
    history.record("Created: b")
    await history.flush()
    assert messages_in_history(state) == ["Created: b", "Created: a"]
    assert len(errors) == 1 and "not a record" in errors[0]


async def test_a_failing_git_is_reported_retried_and_loses_no_message(started, state, db, autojump_clock):
    errors, woken = [], [trio.Event()]

    def on_error(text):
        errors.append(text)
        woken[0].set()

    async def reports(count: int) -> None:
        while len(errors) < count:
            woken[0] = trio.Event()
            if len(errors) < count:
                await woken[0].wait()

    root, history = await started(on_error=on_error, retry_delay=1.0)
    lock = state / ".git" / "index.lock"
    lock.write_bytes(b"")  # another git's lock: every add fails, as on a full disk
    write_bead(root, "a")
    history.record("Created: a")
    await within_real_seconds(DEADLINE, "the error report", lambda: reports(1))
    assert "git add failed" in errors[0] and "index.lock" in errors[0]
    assert pending(db) == ["Created: a"]  # kept for the retry
    write_bead(root, "b")
    history.record("Created: b")  # recorded while the first batch waits
    # A retry may be under way already (virtual time: its second passes at once), its rows read before b's:
    # the lock goes only after a round that began after the next report, so after b, has failed too.
    await within_real_seconds(DEADLINE, "two more reports", lambda: reports(len(errors) + 2))
    lock.unlink()
    await within_real_seconds(DEADLINE, "the retried commit", history.wait_committed)
    assert subjects(state) == ["2 changes: Created: a, Created: b"]  # the retry takes all that waits, in order
    assert messages_in_history(state) == ["Created: a", "Created: b"]


async def test_flush_raises_what_git_said_and_keeps_the_change(started, state):
    root, history = await started()
    (state / ".git" / "index.lock").write_bytes(b"")
    write_bead(root, "a")
    history.record("Created: a")
    with pytest.raises(StorageError, match="git add failed .*index.lock"):
        await history.flush()
    (state / ".git" / "index.lock").unlink()
    await history.flush()
    assert subjects(state) == ["Created: a"]


# ------------------------------------------------------------------ the caller's environment


async def test_a_foreign_git_environment_has_no_effect(started, state, tmp_path, monkeypatch):
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(other)], check=True, capture_output=True)
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*.toml\n")  # would hide every bead from `git add`
    (home / ".gitconfig").write_text("[user]\n\tname = intruder\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "foreign-index"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.email")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "intruder@example.com")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "intruder")
    root, history = await started()
    write_bead(root, "a")
    history.record("Created: a")
    await history.flush()
    assert git(state, "log", "--format=%an <%ae> %cn <%ce> %s") == \
        "anvilfs <anvilfs@localhost> anvilfs <anvilfs@localhost> Created: a\n"
    assert git(state, "ls-tree", "-r", "--name-only", "HEAD").split() == ["beads/a.toml"]
    assert "does not have any commits" in git(other, "log", check=False)
    assert not (tmp_path / "foreign-index").exists()
