"""The git history of the state directory (anvilfs/storage/history.py), with real git throughout."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import threading

import pytest
import trio

from anvilfs.storage import GitHistory, PrivateDir, StorageError
from anvilfs.storage.gitrepo import CONFIG
from anvilfs.storage.history import COMMITTING, JOURNAL, RECOVERED, commit_message

DEADLINE = 20  # seconds: far beyond what git needs here; reached only when something is broken


def git(state, *args: str, check: bool = True) -> str:
    """git on the state's repository, from the test, with no config or environment of the machine's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=os.path.join(state, ".git"), GIT_WORK_TREE=str(state), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C")
    result = subprocess.run(["git", *args], env=env, capture_output=True, text=True, timeout=DEADLINE)
    if check:
        assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout + result.stderr


def messages_in_history(state) -> list[str]:
    """Every change message in `git log`: single-change subjects and grouped bodies, not the group subjects."""
    if not git(state, "for-each-ref", "refs/heads/main").strip():
        return []
    lines = git(state, "log", "--format=%B").splitlines()
    return [line for line in lines if ": " in line and not line.startswith("Anvilfs-Batch: ")
            and " changes: " not in line]


def subjects(state) -> list[str]:
    return git(state, "log", "--format=%s").splitlines()


async def within_real_seconds(seconds: float, what: str, afn) -> None:
    """await afn() with a wall-clock deadline: under autojump_clock trio's own deadlines would expire
    the moment every task waits for git, which runs in real time."""
    finished = threading.Event()
    expired = False

    async def watchdog(scope: trio.CancelScope) -> None:
        nonlocal expired
        if not await trio.to_thread.run_sync(finished.wait, seconds):
            expired = True
            scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watchdog, nursery.cancel_scope)
        await afn()
        finished.set()
    assert not expired, f"{what}: not done within {seconds} s"


@pytest.fixture
def state(tmp_path):
    return tmp_path / "state"


@pytest.fixture
async def started(state):
    """start(**options) -> (root, history) with history.run running for the test."""
    histories = []
    async with trio.open_nursery() as nursery:
        async def start(**options):
            root = PrivateDir(state)
            history = GitHistory(root, **options)
            histories.append(history)
            await within_real_seconds(DEADLINE, "history.run starting", lambda: nursery.start(history.run))
            return root, history
        try:
            yield start
        finally:
            nursery.cancel_scope.cancel()
    for history in histories:
        history.close()


def write_bead(root: PrivateDir, name: str, text: str = "title = 'x'\n") -> None:
    root.subdir("beads").write_atomic(f"{name}.toml", text.encode())


# ------------------------------------------------------------------ committing


async def test_a_recorded_change_is_committed_with_its_message_by_the_running_task(started, state):
    root, history = await started()
    write_bead(root, "research-auth-001")
    history.record("Created: research-auth-001 Research auth system")
    with trio.fail_after(DEADLINE):
        await history.wait_committed()
    assert subjects(state) == ["Created: research-auth-001 Research auth system"]
    assert git(state, "show", "HEAD:beads/research-auth-001.toml") == "title = 'x'\n"
    assert root.read(JOURNAL) is None and root.read(COMMITTING) is None
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


# ------------------------------------------------------------------ a repository not ours


def make_history(state) -> None:
    GitHistory(PrivateDir(state)).close()


def plant_config(state, marker) -> bytes:
    """A config whose filter and fsmonitor run a command on a plain `git add`, as an attacker would plant it."""
    planted = CONFIG + (f'\tfsmonitor = "touch {marker}"\n[filter "x"]\n\tclean = "touch {marker}; cat"\n').encode()
    (state / ".git" / "config").write_bytes(planted)
    (state / "beads" / ".gitattributes").write_text("* filter=x\n")
    (state / "beads" / "a.toml").write_text("x = 1\n")
    return planted


def test_a_planted_config_is_refused_and_nothing_is_run(state, tmp_path):
    make_history(state)
    marker = tmp_path / "pwned"
    planted = plant_config(state, marker)
    assert not marker.exists()
    with pytest.raises(StorageError, match=r"\.git/config is not the one anvilfs wrote; anvilfs will not run git"):
        GitHistory(PrivateDir(state))
    assert not marker.exists()
    assert (state / ".git" / "config").read_bytes() == planted  # refused, not repaired behind the user's back


def test_the_planted_config_would_have_run_its_command_under_plain_git(state, tmp_path):
    """The planted config of the test above is a real threat: plain `git add` runs it."""
    make_history(state)
    marker = tmp_path / "pwned"
    plant_config(state, marker)
    git(state, "add", "-A", "--", "beads")
    assert marker.exists()


def test_a_missing_config_is_refused(state):
    make_history(state)
    (state / ".git" / "config").unlink()
    with pytest.raises(StorageError, match=r"\.git/config is missing"):
        GitHistory(PrivateDir(state))


@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_git_file_or_link_pointing_elsewhere_is_refused(state, tmp_path, kind):
    elsewhere = tmp_path / "elsewhere.git"
    subprocess.run(["git", "init", "-q", "--bare", str(elsewhere)], check=True, capture_output=True)
    PrivateDir(state).close()
    if kind == "file":
        (state / ".git").write_text(f"gitdir: {elsewhere}\n")
    else:
        (state / ".git").symlink_to(elsewhere)
    with pytest.raises(StorageError, match=r"\.git is not a directory .* move it away"):
        GitHistory(PrivateDir(state))


def test_a_second_history_on_the_same_state_is_refused_while_the_first_holds_it(state):
    first = GitHistory(PrivateDir(state))
    try:
        with pytest.raises(StorageError, match="another anvilfs server .* is using the history"):
            GitHistory(PrivateDir(state), lock_timeout=0)
    finally:
        first.close()
    GitHistory(PrivateDir(state), lock_timeout=0).close()  # free again once the first is closed


# ------------------------------------------------------------------ what a killed server leaves


async def test_lock_files_left_by_a_killed_git_are_removed_and_commits_go_on(state):
    make_history(state)
    (state / ".git" / "index.lock").write_bytes(b"")
    (state / ".git" / "refs" / "heads" / "main.lock").write_bytes(b"")
    root = PrivateDir(state)
    history = GitHistory(root)
    try:
        assert history.stale_locks_removed == ("index.lock", "refs/heads/main.lock")
        write_bead(root, "a")
        history.record("Created: a")
        await history.flush()
    finally:
        history.close()
    assert subjects(state) == ["Created: a"]


async def test_a_journal_left_by_a_killed_server_is_committed_at_start(started, state):
    root = PrivateDir(state)
    killed = GitHistory(root)
    write_bead(root, "a")
    killed.record("Created: a")
    killed.close()  # as if killed before its run() committed
    await started()
    assert subjects(state) == ["Created: a"]


async def test_a_batch_already_committed_when_the_server_died_is_not_committed_again(started, state):
    root = PrivateDir(state)
    killed = GitHistory(root)
    write_bead(root, "a")
    killed.record("Created: a")
    journal = root.read(JOURNAL)
    await killed.flush()
    killed.close()
    root.write_atomic(COMMITTING, journal)  # died after the commit, before removing what it committed
    _, history = await started()
    write_bead(root, "b")
    history.record("Created: b")
    await history.flush()
    assert subjects(state) == ["Created: b", "Created: a"]
    assert root.read(COMMITTING) is None


async def test_changes_no_message_was_recorded_for_are_committed_as_recovered_at_start(started, state):
    root = PrivateDir(state)
    make_history(state)
    write_bead(root, "a")  # died between the write and its record()
    await started()
    assert subjects(state) == [RECOVERED]
    assert "A\tbeads/a.toml" in git(state, "log", "-1", "--format=%b")


async def test_a_record_cut_off_by_a_crash_does_not_swallow_the_next_one(started, state):
    root = PrivateDir(state)
    make_history(state)
    root.append(JOURNAL, b'["old.1", "Created: a"]\n["old.2", "Crea')  # a power cut in mid-append
    errors = []
    _, history = await started(on_error=errors.append)
    write_bead(root, "b")
    history.record("Created: b")
    await history.flush()
    assert messages_in_history(state) == ["Created: b", "Created: a"]
    assert len(errors) == 1 and "not a record" in errors[0]


async def test_a_failing_git_is_reported_retried_and_loses_no_message(started, state, autojump_clock):
    errors = []
    reported = trio.Event()

    def on_error(text):
        errors.append(text)
        reported.set()

    root, history = await started(on_error=on_error, retry_delay=1.0)
    lock = state / ".git" / "index.lock"
    lock.write_bytes(b"")  # another git's lock: every add fails, as on a full disk
    write_bead(root, "a")
    history.record("Created: a")
    await within_real_seconds(DEADLINE, "the error report", reported.wait)
    assert "git add failed" in errors[0] and "index.lock" in errors[0]
    assert b"Created: a" in root.read(COMMITTING)  # kept for the retry
    write_bead(root, "b")
    history.record("Created: b")  # recorded while the first batch waits
    lock.unlink()
    await within_real_seconds(DEADLINE, "the retried commits", history.wait_committed)
    assert messages_in_history(state) == ["Created: b", "Created: a"]


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


# ------------------------------------------------------------------ SIGKILL, 20 times

WRITER = r'''
"""Writes bead files and records each change, printing "done NAME REV" once record() returned."""
import random, sys, trio
from anvilfs.storage import GitHistory, PrivateDir

async def main(state, round_no, seed):
    rng = random.Random(seed)
    root = PrivateDir(state)
    history = GitHistory(root, on_error=lambda text: print("error", text, file=sys.stderr, flush=True),
                         group_delay=rng.choice((0, 0.002, 0.01)))  # git runs most of the time: kills land in it
    beads = root.subdir("beads")
    made = []
    async with trio.open_nursery() as nursery:
        await nursery.start(history.run)
        for rev in range(1_000_000):
            if made and rng.random() < 0.3:
                name, verb = rng.choice(made), "Updated"
            else:
                name, verb = f"r{round_no}-{rev}", "Created"
                made.append(name)
            beads.write_atomic(f"{name}.toml", f"rev = {rev}\n".encode())
            history.record(f"{verb}: {name} rev {rev}")
            print("done", name, rev, flush=True)
            await trio.sleep(rng.choice((0, 0, 0.001, 0.004)))  # requests arriving, not synchronisation

trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
'''


async def run_writer_until_killed(script, state, round_no: int, rng) -> tuple[list[tuple[str, int]], str]:
    """Start the writer in its own process group and SIGKILL it after a random number of answered
    changes: with its git (the group) in even rounds, alone in odd ones (its git runs on, and the
    restarted server must wait for it); every change it printed as done, and its stderr."""
    stderr = state.parent / f"writer{round_no}.err"
    with open(stderr, "wb") as err:
        proc = await trio.lowlevel.open_process(
            [sys.executable, str(script), str(state), str(round_no), str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    done, buffer, wanted = [], b"", rng.randint(1, 120)

    async def read_some() -> bool:
        nonlocal buffer
        chunk = await proc.stdout.receive_some()
        *lines, buffer = (buffer + chunk).split(b"\n")
        done.extend((name, int(rev)) for _, name, rev in (line.decode().split() for line in lines))
        return bool(chunk)

    try:
        with trio.fail_after(DEADLINE * 3):
            while len(done) < wanted:
                assert await read_some(), f"round {round_no}: the writer ended: {stderr.read_text()}"
        await trio.sleep(rng.uniform(0, 0.01))  # kill at a random point, not only right after a print
    finally:
        (os.kill if round_no % 2 else os.killpg)(proc.pid, signal.SIGKILL)
        with trio.fail_after(DEADLINE):
            await proc.wait()
            while await read_some():  # printed before it died: answered too
                pass
    return done, stderr.read_text()


def check_round(state, round_no: int, done: list[tuple[str, int]], errors: str) -> None:
    messages = messages_in_history(state)
    assert len(messages) == len(set(messages)), f"round {round_no}: a message was committed twice"
    committed = set(messages)
    last_rev = {}
    for name, rev in done:
        verb = "Created" if name == f"r{round_no}-{rev}" else "Updated"
        assert f"{verb}: {name} rev {rev}" in committed, f"round {round_no}: {verb} {name} rev {rev} not in git log"
        last_rev[name] = rev
    for name, rev in last_rev.items():
        on_disk = int((state / "beads" / f"{name}.toml").read_text().split("=")[1])
        assert on_disk >= rev, f"round {round_no}: {name} has rev {on_disk}, rev {rev} was answered"
    assert git(state, "status", "--porcelain", "--", "beads") == "", f"round {round_no}: files not committed"
    fsck = subprocess.run(["git", "--git-dir", str(state / ".git"), "fsck", "--no-dangling", "--strict"],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert fsck.returncode == 0 and not fsck.stdout + fsck.stderr, f"round {round_no}: git fsck: {fsck.stderr}"
    assert "error" not in errors, f"round {round_no}: the writer reported: {errors}"


async def test_every_answered_change_is_in_history_over_20_sigkills(state, tmp_path):
    rng = random.Random(7)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    total = locks = 0
    for round_no in range(20):
        done, errors = await run_writer_until_killed(script, state, round_no, rng)
        history = GitHistory(PrivateDir(state))  # the restarted server
        try:
            locks += bool(history.stale_locks_removed)
            with trio.fail_after(DEADLINE):
                await history.flush()
        finally:
            history.close()
        check_round(state, round_no, done, errors)
        total += len(done)
    print(f"{total} answered changes over 20 SIGKILLs: all in history once; {locks} restarts found git's locks")


@pytest.mark.parametrize("redirect", ["commondir", "gitdir", "worktrees"])
def test_a_planted_commondir_is_refused_and_nothing_is_run(state, tmp_path, redirect):
    """git reads its config from $GIT_DIR/commondir when that exists: the byte check of .git/config is not enough."""
    make_history(state)
    evil = tmp_path / "evil.git"
    subprocess.run(["git", "init", "-q", "--bare", str(evil)], check=True, capture_output=True)
    marker = tmp_path / "pwned"
    with open(evil / "config", "a") as config:
        config.write(f'[filter "x"]\n\tclean = "touch {marker}; cat"\n')
    (state / "beads" / ".gitattributes").write_text("* filter=x\n")
    (state / "beads" / "a.toml").write_text("x = 1\n")
    if redirect == "worktrees":
        (state / ".git" / "worktrees").mkdir()
    else:
        (state / ".git" / redirect).write_text(f"{evil}\n")
    with pytest.raises(StorageError, match=f"has {redirect}, which anvilfs never makes"):
        GitHistory(PrivateDir(state))
    assert not marker.exists()


def test_git_runs_with_its_common_dir_pinned(state):
    from anvilfs.storage.gitrepo import _git_environment

    env = _git_environment(str(state))
    assert env["GIT_COMMON_DIR"] == env["GIT_DIR"] == os.path.join(str(state), ".git")
