"""The worktrees anvilfs made and their states; prune removes only the merged and clean, never forcing."""

from __future__ import annotations

import os
import shutil

from anvilfs.worktrees import (MergeConfig, MergeState, WorktreeState, create, list_worktrees, merge_path_for,
                               merge_step, prune, remove_if_merged)
from harness.deadlines import within
from harness.worktrees import GIT, commit_file, entry_for, finished_bead, git, tip, write


async def many_kinds(repo, root, tmp_path):
    """One worktree of each state, and one of the user's outside ROOT: the records of ours."""
    with within(60, "sessions"):
        live = await create(GIT, repo, root, "live")
        merged = await create(GIT, repo, root, "merged")
        await finished_bead(merged, "m-001", {"m.txt": "merged work\n"})
        assert (await merge_step(GIT, entry_for(merged, "m-001"), MergeConfig(), merge_path_for(root, repo))).state \
            is MergeState.MERGED
        committed = await create(GIT, repo, root, "committed")
        await finished_bead(committed, "c-002", {"c.txt": "unmerged work\n"})
        dirty = await create(GIT, repo, root, "dirty")
        stashed = await create(GIT, repo, root, "stashed")
        gone = await create(GIT, repo, root, "gone")
    write(os.path.join(dirty.path, "notes.txt"), "uncommitted\n")
    write(os.path.join(stashed.path, "README"), "stashed edit\n")
    git(stashed.path, "stash", "-q")
    shutil.rmtree(gone.path)
    os.makedirs(os.path.join(root, "stray"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "users-own"), "-b", "users-own")
    return [live, merged, committed, dirty, stashed, gone]


async def test_every_worktree_of_ours_is_listed_with_its_state(repo, root, tmp_path):
    records = await many_kinds(repo, root, tmp_path)
    with within(60, "list"):
        listed = await list_worktrees(GIT, repo, root, records, {"live"}, "main")
    states = {(info.session, info.state) for info in listed}
    assert states == {("live", WorktreeState.ACTIVE), ("merged", WorktreeState.MERGED),
                      ("committed", WorktreeState.UNMERGED), ("dirty", WorktreeState.UNMERGED),
                      ("stashed", WorktreeState.UNMERGED), ("gone", WorktreeState.ORPHANED),
                      ("stray", WorktreeState.ORPHANED), ("merges", WorktreeState.ACTIVE)}
    why = {info.session: info.detail for info in listed}
    assert "commits main lacks" in why["committed"] and "notes.txt" in why["dirty"] and "stash@{0}" in why["stashed"]
    line = next(info for info in listed if info.session == "live").line()
    assert line == f"{os.path.realpath(root)}/live live anvil/session/live active"


async def test_prune_removes_only_the_merged_and_clean(repo, root, tmp_path):
    records = await many_kinds(repo, root, tmp_path)
    unmerged_tip = tip(repo, "anvil/bead/c-002")
    with within(60, "prune"):
        removed, deleted = await prune(GIT, repo, root, records, {"live"}, "main")
    real = os.path.realpath(root)
    assert removed == [f"{real}/merged"]
    assert deleted == ["anvil/bead/m-001"] and git(repo, "branch", "--list", "anvil/session/merged") == ""
    for kept in ("live", "committed", "dirty", "stashed", "stray"):
        assert os.path.isdir(os.path.join(root, kept)), kept
    assert open(os.path.join(root, "dirty", "notes.txt")).read() == "uncommitted\n"
    assert tip(repo, "anvil/bead/c-002") == unmerged_tip and git(repo, "stash", "list") != ""
    assert git(repo, "branch", "--list", "anvil/session/committed") != ""  # goes only with its worktree
    assert os.path.isdir(tmp_path / "users-own") and tip(repo, "users-own")


async def test_remove_keeps_unmerged_work_and_says_why(repo, root):
    with within(60, "a session with a commit of its own"):
        wt = await create(GIT, repo, root, "dev1")
    commit_file(wt.path, "wip.txt", "work\n")
    with within(30, "remove"):
        why = await remove_if_merged(GIT, repo, wt.path, "main")
    assert "commits main lacks" in why and os.path.exists(os.path.join(wt.path, "wip.txt"))
    git(repo, "merge", "-q", "--ff-only", "anvil/session/dev1")
    with within(30, "remove once merged"):
        assert await remove_if_merged(GIT, repo, wt.path, "main") == ""
    assert not os.path.exists(wt.path) and git(repo, "branch", "--list", "anvil/session/dev1") == ""
