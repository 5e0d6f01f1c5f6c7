"""A session's worktree against real git: its base, its branch names, claims of beads and their completion."""

from __future__ import annotations

import errno
import os
import shutil

import pytest

from anvilfs.worktrees import (BadName, DirtyWorktree, MergeConfig, UnresolvedConflict, check_base, claim, complete,
                               create, setup)
from harness.deadlines import within
from harness.worktrees import GIT, commit_file, git, status, tip, write


async def test_the_base_is_the_branch_repo_has_checked_out(repo):
    with within(30, "check_base"):
        base = await check_base(GIT, repo)
        named = await check_base(GIT, repo, "refs/heads/main")
    assert (base.branch, base.tip) == ("main", tip(repo, "main"))
    assert named == base


@pytest.mark.parametrize("ref, says", [("-main", "not starting with '-'"), ("a..b", "cannot be a git branch"),
                                       ("nosuch", "is not a local branch"), ("main.lock", "cannot be a git branch")])
async def test_a_bad_base_is_refused_saying_why(repo, ref, says):
    with within(30, "check_base"), pytest.raises(BadName) as caught:
        await check_base(GIT, repo, ref)
    assert says in caught.value.message and caught.value.errno == errno.EINVAL


async def test_a_detached_repo_needs_a_named_base(repo):
    git(repo, "switch", "-q", "--detach")
    with within(30, "check_base"), pytest.raises(BadName, match="detached"):
        await check_base(GIT, repo)


@pytest.mark.parametrize("name", ["x.lock", "a..b", "dot."])
async def test_a_session_name_that_cannot_make_a_branch_is_refused(repo, root, name):
    with within(30, "create"), pytest.raises(BadName) as caught:
        await create(GIT, repo, root, name)
    assert caught.value.errno == errno.EINVAL and name in caught.value.message
    assert not os.path.exists(os.path.join(root, name))


async def test_a_session_gets_a_worktree_on_its_own_branch_from_the_base(repo, root):
    before = tip(repo, "HEAD")
    with within(30, "create"):
        wt = await create(GIT, repo, root, "dev1")
    assert wt.path == os.path.join(os.path.realpath(root), "dev1") and wt.branch == "anvil/session/dev1"
    assert git(wt.path, "symbolic-ref", "--short", "HEAD") == "anvil/session/dev1"
    assert tip(wt.path, "HEAD") == before and wt.base == "main"
    assert status(repo) == "" and tip(repo, "HEAD") == before  # REPO untouched


async def test_a_reused_name_never_takes_over_a_kept_branch(repo, root):
    with within(30, "create"):
        first = await create(GIT, repo, root, "bob")
    kept = commit_file(first.path, "wip.txt", "bob's unmerged work\n")
    git(repo, "worktree", "remove", first.path)  # the worktree gone, its branch kept (as `remove` keeps it)
    with within(30, "create again"):
        second = await create(GIT, repo, root, "bob")
    assert second.branch == "anvil/session/bob@2" and second.path.endswith("/bob@2")
    assert tip(repo, "anvil/session/bob") == kept


async def test_a_claim_branches_from_the_bases_current_tip(repo, root):
    with within(30, "create"):
        wt = await create(GIT, repo, root, "dev1")
    moved = commit_file(repo, "later.txt", "main moved on\n")
    with within(30, "claim"):
        claimed = await claim(GIT, wt, "fix-auth-001")
    assert claimed.branch == "anvil/bead/fix-auth-001" and claimed.base_tip == moved and not claimed.resumed
    assert git(wt.path, "symbolic-ref", "--short", "HEAD") == "anvil/bead/fix-auth-001"
    assert tip(wt.path, "HEAD") == moved


async def test_a_claim_asked_again_after_the_base_moved_brings_the_files_to_its_tip(repo, root):
    """A claim whose answer a crash took is asked again after another bead was merged. The branch restarts at
    the base's tip, and the worktree's files with it: a branch moved under its own checkout left the files
    behind, and `complete` then committed the other bead's file as deleted (found by
    tests/server/test_worktree_sigkill.py)."""
    with within(30, "create and claim"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "again-001")
    moved = commit_file(repo, "merged.txt", "another bead's work\n")
    with within(30, "claim again"):
        claimed = await claim(GIT, wt, "again-001")
    assert claimed.base_tip == moved and tip(wt.path, "HEAD") == moved
    assert status(wt.path) == "" and os.path.exists(os.path.join(wt.path, "merged.txt"))
    write(os.path.join(wt.path, "mine.txt"), "mine\n")
    with within(30, "complete"):
        done = await complete(GIT, wt, "again-001")
    assert git(repo, "diff", "--name-status", moved, done.tip) == "A\tmine.txt"


async def test_a_claim_is_refused_while_an_earlier_beads_work_is_uncommitted(repo, root):
    with within(30, "create and claim"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "first-001")
    write(os.path.join(wt.path, "half.txt"), "not committed\n")
    with within(30, "claim"), pytest.raises(DirtyWorktree) as caught:
        await claim(GIT, wt, "second-002")
    assert caught.value.errno == errno.EBUSY and "half.txt" in caught.value.message
    assert git(wt.path, "symbolic-ref", "--short", "HEAD") == "anvil/bead/first-001"
    assert open(os.path.join(wt.path, "half.txt")).read() == "not committed\n"


async def test_complete_commits_the_leftovers_as_the_session_without_hooks(repo, root, tmp_path):
    hook = os.path.join(repo, ".git", "hooks", "pre-commit")
    write(hook, f"#!/bin/sh\ntouch {tmp_path}/hook-ran\nexit 1\n")
    os.chmod(hook, 0o755)
    with within(30, "create and claim"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "fix-auth-001")
    write(os.path.join(wt.path, "src", "auth.py"), "fixed = True\n")
    with within(30, "complete"):
        done = await complete(GIT, wt, "fix-auth-001", "Fix auth")
    assert done.committed == tip(repo, "anvil/bead/fix-auth-001") == done.tip and done.own_commits == 1
    assert git(repo, "log", "-1", "--format=%an <%ae>|%s", done.tip) == "dev1 <dev1@anvilfs>|fix-auth-001: Fix auth"
    assert not os.path.exists(tmp_path / "hook-ran")
    assert status(wt.path) == "" and git(wt.path, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached


async def test_complete_with_nothing_of_its_own_says_so(repo, root):
    with within(30, "create, claim, complete"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "noop-001")
        done = await complete(GIT, wt, "noop-001")
    assert done.committed is None and done.own_commits == 0


async def test_complete_refuses_a_worktree_not_on_the_beads_branch(repo, root):
    with within(30, "create"):
        wt = await create(GIT, repo, root, "dev1")
    with within(30, "complete"), pytest.raises(DirtyWorktree, match="claim bead x-001 in"):
        await complete(GIT, wt, "x-001")


async def test_a_bead_back_from_a_conflict_keeps_its_branch_and_gets_the_markers(repo, root):
    with within(30, "create and claim"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "edit-001")
    write(os.path.join(wt.path, "shared.txt"), "one\nTWO by the bead\nthree\n")
    with within(30, "complete"):
        first = await complete(GIT, wt, "edit-001")
    commit_file(repo, "shared.txt", "one\nTWO by main\nthree\n")  # the base moved over the same line
    with within(30, "claim again"):
        again = await claim(GIT, wt, "edit-001")
    assert again.resumed and again.conflicts == ("shared.txt",)
    assert "<<<<<<<" in open(os.path.join(wt.path, "shared.txt")).read()
    with within(30, "complete"), pytest.raises(UnresolvedConflict) as caught:
        await complete(GIT, wt, "edit-001")
    assert caught.value.paths == ("shared.txt",)
    write(os.path.join(wt.path, "shared.txt"), "one\nTWO by both\nthree\n")
    with within(30, "complete after resolving"):
        done = await complete(GIT, wt, "edit-001")
    assert git(repo, "merge-base", "--is-ancestor", first.tip, done.tip, check=False) == ""
    assert git(repo, "merge-base", "--is-ancestor", "main", done.tip, check=False) == ""
    assert git(repo, "show", f"{done.tip}:shared.txt") == "one\nTWO by both\nthree"


async def test_a_reopened_bead_whose_branch_was_merged_starts_anew(repo, root):
    with within(30, "create, claim, complete"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "doc-001")
        write(os.path.join(wt.path, "doc.txt"), "docs\n")
        done = await complete(GIT, wt, "doc-001")
    git(repo, "merge", "-q", "--ff-only", done.tip)  # merged by hand
    later = commit_file(repo, "other.txt", "more\n")
    with within(30, "claim"):
        again = await claim(GIT, wt, "doc-001")
    assert not again.resumed and tip(repo, "anvil/bead/doc-001") == later


async def test_a_name_whose_old_worktree_git_still_knows_is_not_reused(repo, root):
    with within(30, "create"):
        first = await create(GIT, repo, root, "bob")
    shutil.rmtree(first.path)  # gone by hand; git still has it registered (missing)
    git(repo, "update-ref", "-d", "refs/heads/anvil/session/bob")
    with within(30, "create again"):
        second = await create(GIT, repo, root, "bob")
    assert second.path.endswith("/bob@2")


async def test_the_setup_commands_run_in_a_new_worktree_and_say_how_they_failed(repo, root):
    with within(30, "create"):
        wt = await create(GIT, repo, root, "dev1")
    ok = MergeConfig(setup=(("sh", "-c", "echo installed > .deps"),))
    with within(30, "setup"):
        assert await setup(wt.path, ok) is None
    assert open(os.path.join(wt.path, ".deps")).read() == "installed\n"
    bad = MergeConfig(setup=(("sh", "-c", "echo no network; exit 2"),))
    with within(30, "setup"):
        failed = await setup(wt.path, bad)
    assert failed.detail == "setup sh -c echo no network; exit 2 exited 2" and failed.output == "no network"
