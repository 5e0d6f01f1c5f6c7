"""The git history of the state directory (anvilfs/storage/history.py), with real git throughout."""

from __future__ import annotations

import os
import stat
import subprocess
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
