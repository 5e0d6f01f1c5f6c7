"""The start-up repair: no merge worktree left mid-rebase, a half-done fast-forward finished, a live step waited for."""

from __future__ import annotations

import errno
import fcntl
import json
import os

import pytest

from anvilfs.worktrees import MergeConfig, MergeState, StepRunning, create, merge_path_for, merge_step, repair
from harness.deadlines import within
from harness.worktrees import GIT, commit_file, entry_for, finished_bead, git, mid_operation, status, tip, write


async def merged_once(repo, root):
    """A session with one bead merged, so the merge worktree exists; (session, merge worktree path)."""
    with within(60, "a bead merged"):
        dev1 = await create(GIT, repo, root, "dev1")
        await finished_bead(dev1, "a-001", {"a.txt": "from a\n"})
        merges = merge_path_for(root, repo)
        assert (await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)).state is MergeState.MERGED
    return dev1, merges


def commit_on_main(worktree, name: str, text: str) -> str:
    """A commit on top of main, made detached in `worktree` as a step would."""
    git(worktree, "switch", "-q", "--detach", "main")
    return commit_file(worktree, name, text)


async def test_a_merge_worktree_left_mid_rebase_is_aborted_at_start(repo, root):
    _, merges = await merged_once(repo, root)
    mine = commit_on_main(merges, "README", "mine\n")
    commit_on_main(merges, "README", "theirs\n")
    git(merges, "rebase", mine, check=False)  # replays 'theirs' onto 'mine': a conflict in README
    assert mid_operation(merges) == ["rebase-merge"], "the test must leave a rebase in progress"
    admin = git(merges, "rev-parse", "--absolute-git-dir")
    for lock in ("index.lock", "HEAD.lock", "ORIG_HEAD.lock"):  # as a git killed with the server leaves them
        write(os.path.join(admin, lock), "")
    with within(60, "repair"):
        repaired = await repair(GIT, repo, merges)
    assert repaired.aborted == (f"{merges}: rebase",)
    assert mid_operation(merges) == [] and status(merges) == ""
    assert not [name for name in os.listdir(admin) if name.endswith(".lock")]


async def test_a_merge_worktree_a_power_cut_broke_is_made_again(repo, root):
    dev1, merges = await merged_once(repo, root)
    admin = git(merges, "rev-parse", "--absolute-git-dir")
    write(os.path.join(admin, "HEAD"), "")  # torn
    with within(60, "a bead, and its step"):
        await finished_bead(dev1, "b-002", {"b.txt": "from b\n"})
        outcome = await merge_step(GIT, entry_for(dev1, "b-002"), MergeConfig(), merges)
    assert outcome.state is MergeState.MERGED and status(merges) == "" and status(repo) == ""


async def test_a_fast_forward_cut_between_files_and_branch_is_finished(repo, root):
    _, merges = await merged_once(repo, root)
    old = tip(repo, "main")
    git(repo, "switch", "-q", "-c", "side")
    write(os.path.join(repo, "c.txt"), "from c\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-q", "-m", "c")
    new = tip(repo, "side")
    git(repo, "switch", "-q", "main")
    git(repo, "read-tree", "-m", "-u", old, new)  # what `merge --ff-only` had done when the power went
    with open(merges + ".journal", "w") as file:
        json.dump(dict(bead="c-003", branch="anvil/bead/c-003", base="main", old=old, new=new, tip=new,
                       holder=os.path.realpath(repo)), file)
    assert status(repo) != "", "the test must leave REPO half fast-forwarded"
    with within(60, "repair"):
        repaired = await repair(GIT, repo, merges)
    assert len(repaired.finished) == 1 and tip(repo, "main") == new and status(repo) == ""
    assert not os.path.exists(merges + ".journal")


async def test_a_lock_in_repo_is_reported_never_removed(repo, root):
    _, merges = await merged_once(repo, root)
    lock = os.path.join(repo, ".git", "refs", "heads", "main.lock")
    write(lock, "")
    with within(60, "repair"):
        repaired = await repair(GIT, repo, merges)
    assert repaired.stale_locks == (lock,) and os.path.exists(lock)


async def test_a_step_still_running_is_waited_for_then_refused(repo, root):
    _, merges = await merged_once(repo, root)
    fd = os.open(merges + ".lock", os.O_RDWR)  # as a gate a killed server started would hold it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with within(30, "repair to give up"), pytest.raises(StepRunning) as caught:
            await repair(GIT, repo, merges, lock_wait=0.5)
        assert caught.value.errno == errno.EBUSY and "still runs" in caught.value.message
    finally:
        os.close(fd)
    with within(60, "repair once it ended"):
        await repair(GIT, repo, merges)
