"""The merge step against real git: one entry at a time, the base moved forward, or nothing changed at all."""

from __future__ import annotations

import os
import sys

import trio

from anvilfs.worktrees import MergeConfig, MergeMode, MergeState, claim, complete, create, merge_path_for, merge_step
from harness.deadlines import within
from harness.worktrees import GIT, commit_file, entry_for, finished_bead, git, mid_operation, status, tip, write

PYTHON = sys.executable
GATE_SLOW = ("sh", "-c", "sleep 0.3")  # a step long enough for another to start meanwhile


def snapshot(repo: str) -> dict[str, str]:
    """Every ref of the repository and the status of every worktree: what 'exactly as before' compares."""
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    trees = git(repo, "worktree", "list", "--porcelain").split("\n\n")
    paths = [t.split("\n")[0].removeprefix("worktree ") for t in trees if t]
    return {"refs": refs, **{p: status(p) + "|" + git(p, "rev-parse", "HEAD") for p in paths
                             if not os.path.basename(p).startswith(".merge-")}}


async def two_sessions(repo, root):
    with within(30, "two sessions"):
        return await create(GIT, repo, root, "dev1"), await create(GIT, repo, root, "dev2")


async def two_beads(repo, root, a_files: dict[str, str], b_files: dict[str, str]):
    """Sessions dev1 and dev2 with beads a-001 and b-002 completed; and the merge worktree's path."""
    dev1, dev2 = await two_sessions(repo, root)
    with within(30, "beads a-001 and b-002"):
        await finished_bead(dev1, "a-001", a_files)
        await finished_bead(dev2, "b-002", b_files)
    return dev1, dev2, merge_path_for(root, repo)


async def bead_a(repo, root):
    """Session dev1 with bead a-001 (writing a.txt) completed, ready to merge."""
    with within(30, "bead a-001"):
        dev1, _ = await two_sessions(repo, root)
        await finished_bead(dev1, "a-001", {"a.txt": "from a\n"})
    return dev1


async def test_two_beads_merge_in_turn_and_repos_checkout_follows(repo, root, tmp_path):
    for hook in ("pre-rebase", "post-rewrite", "post-merge", "pre-commit", "reference-transaction"):
        write(os.path.join(repo, ".git", "hooks", hook), f"#!/bin/sh\ntouch {tmp_path}/{hook}-ran\nexit 1\n")
        os.chmod(os.path.join(repo, ".git", "hooks", hook), 0o755)
    dev1, dev2, merges = await two_beads(repo, root, {"a.txt": "from a\n"}, {"b.txt": "from b\n"})
    with within(60, "two merge steps"):
        first = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
        second = await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(), merges)
    assert (first.state, second.state) == (MergeState.MERGED, MergeState.MERGED), (first, second)
    assert second.base_before == first.base_after and tip(repo, "main") == second.base_after
    assert open(os.path.join(repo, "a.txt")).read() == "from a\n" and open(os.path.join(repo, "b.txt")).read()
    assert status(repo) == "" and git(repo, "rev-list", "--merges", "main") == ""  # followed, and linear
    assert tip(repo, "anvil/bead/b-002") == tip(repo, "main")  # the branch records what was merged
    assert git(repo, "log", "-1", "--format=%an|%cn", "main") == "dev2|anvilfs"  # rebased: the author kept
    assert mid_operation(merges) == [] and status(merges) == ""
    assert not [name for name in os.listdir(tmp_path) if name.endswith("-ran")], "a hook of REPO's ran"


async def test_an_entry_merged_already_is_never_merged_twice(repo, root):
    dev1 = await bead_a(repo, root)
    merges = merge_path_for(root, repo)
    with within(60, "the same step twice"):
        first = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
        again = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
    assert again.state is MergeState.MERGED and again.base_after == again.base_before == first.base_after
    assert git(repo, "log", "--format=%s", "--", "a.txt").splitlines() == ["a-001"]


async def test_a_conflict_changes_nothing_and_names_the_file(repo, root):
    dev1, dev2, merges = await two_beads(repo, root, {"shared.txt": "one\nTWO by a\nthree\n"}, {"shared.txt": "one\nTWO by b\nthree\n"})
    with within(60, "merge a"):
        assert (await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)).state is MergeState.MERGED
    before = snapshot(repo)
    with within(60, "merge b"):
        outcome = await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(), merges)
    assert outcome.state is MergeState.CONFLICT and outcome.files == ("shared.txt",), outcome
    assert "shared.txt" in outcome.detail
    assert snapshot(repo) == before
    assert mid_operation(merges) == [] and status(merges) == ""


async def test_a_failing_gate_changes_nothing_and_reports_its_output(repo, root):
    dev1 = await bead_a(repo, root)
    gate = ("sh", "-c", "test -f a.txt && echo the tests found a.txt; echo boom >&2; exit 3")
    before = snapshot(repo)
    with within(60, "merge"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(gates=(gate,)),
                                   merge_path_for(root, repo))
    assert outcome.state is MergeState.GATE_FAILED and outcome.gate == gate and "exited 3" in outcome.detail
    assert "the tests found a.txt" in outcome.output and outcome.output.endswith("boom")
    assert snapshot(repo) == before


async def test_a_gate_that_hangs_is_ended_at_its_timeout(repo, root):
    dev1 = await bead_a(repo, root)
    config = MergeConfig(gates=((PYTHON, "-c", "import time; print('started', flush=True); time.sleep(600)"),),
                         gate_timeout=1)
    with within(30, "merge with a hanging gate"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), config, merge_path_for(root, repo))
    assert outcome.state is MergeState.GATE_FAILED and "did not finish within 1s" in outcome.detail
    assert outcome.output == "started"


async def test_a_gate_that_cannot_start_says_so(repo, root):
    dev1 = await bead_a(repo, root)
    config = MergeConfig(gates=(("/nonexistent/gate",),))
    with within(30, "merge"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), config, merge_path_for(root, repo))
    assert outcome.state is MergeState.GATE_FAILED and "could not start" in outcome.detail


async def test_repo_with_local_changes_on_the_base_blocks_and_keeps_them(repo, root):
    dev1 = await bead_a(repo, root)
    write(os.path.join(repo, "README"), "the user's edit\n")
    before = snapshot(repo)
    merges = merge_path_for(root, repo)
    with within(60, "merge"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
    assert outcome.state is MergeState.BLOCKED and outcome.detail.startswith("REPO has local changes on main")
    assert snapshot(repo) == before and open(os.path.join(repo, "README")).read() == "the user's edit\n"
    git(repo, "checkout", "README")
    with within(60, "merge once clean"):
        assert (await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)).state is MergeState.MERGED


async def test_a_base_moved_during_the_step_is_never_clobbered(repo, root):
    dev1 = await bead_a(repo, root)
    sneak = ("git", "-C", repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty",
             "-m", "the user committed meanwhile")
    merges = merge_path_for(root, repo)
    with within(60, "merge while the user commits"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(gates=(sneak,)), merges)
    assert outcome.state is MergeState.QUEUED and "moved during the merge" in outcome.detail
    assert git(repo, "log", "-1", "--format=%s", "main") == "the user committed meanwhile"
    with within(60, "merge again"):
        again = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
    assert again.state is MergeState.MERGED
    assert git(repo, "log", "--format=%s", "main").splitlines()[:2] == ["a-001", "the user committed meanwhile"]


async def test_without_a_checkout_the_base_moves_by_update_ref(repo, root):
    git(repo, "switch", "-q", "-c", "elsewhere")
    dev1 = await bead_a(repo, root)  # its base: elsewhere, the branch REPO has checked out
    git(repo, "switch", "-q", "main")  # now no worktree has the base checked out
    with within(60, "merge"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merge_path_for(root, repo))
    assert outcome.state is MergeState.MERGED and tip(repo, "elsewhere") == outcome.base_after
    assert status(repo) == ""


async def test_merge_mode_makes_a_merge_commit(repo, root):
    dev1 = await bead_a(repo, root)
    done_tip = tip(repo, "anvil/bead/a-001")
    commit_file(repo, "main.txt", "main moved\n")
    with within(60, "merge"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(mode=MergeMode.MERGE),
                                   merge_path_for(root, repo))
    assert outcome.state is MergeState.MERGED
    assert git(repo, "log", "-1", "--format=%P", "main").split() == [outcome.base_before, done_tip]
    assert status(repo) == "" and os.path.exists(os.path.join(repo, "a.txt"))


async def test_the_base_is_pushed_and_a_failed_push_is_a_state_its_retry_ends(repo, root, tmp_path):
    remote = str(tmp_path / "remote.git")
    git(tmp_path, "init", "-q", "--bare", remote)
    git(repo, "remote", "add", "origin", remote)
    git(repo, "push", "-q", "origin", "main")
    dev1, dev2, merges = await two_beads(repo, root, {"a.txt": "from a\n"}, {"b.txt": "from b\n"})
    with within(60, "merge with push"):
        pushed = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(push=True), merges)
    assert pushed.state is MergeState.MERGED and tip(remote, "main") == tip(repo, "main") == pushed.base_after
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    with within(60, "merge with a failing push"):
        failed = await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(push=True), merges)
    assert failed.state is MergeState.BLOCKED and "push to origin failed" in failed.detail
    assert tip(repo, "main") == failed.base_after != pushed.base_after  # merged locally all the same
    assert tip(remote, "main") == pushed.base_after  # the remote behind, never ahead
    git(repo, "remote", "set-url", "origin", remote)
    with within(60, "the retry"):
        retried = await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(push=True), merges)
    assert retried.state is MergeState.MERGED and tip(remote, "main") == failed.base_after


async def test_a_push_that_hangs_is_ended_at_its_timeout(repo, root):
    git(repo, "config", "protocol.ext.allow", "always")
    git(repo, "remote", "add", "origin", "ext::sleep 600")
    dev1 = await bead_a(repo, root)
    with within(30, "merge with a hanging push"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(push=True, push_timeout=1),
                                   merge_path_for(root, repo))
    assert outcome.state is MergeState.BLOCKED and "push to origin did not finish within 1s" in outcome.detail
    assert tip(repo, "main") == outcome.base_after != outcome.base_before


async def test_a_bead_back_from_a_conflict_merges_once_resolved(repo, root):
    dev1, dev2, merges = await two_beads(repo, root, {"shared.txt": "one\nTWO by a\nthree\n"},
                                         {"shared.txt": "one\nTWO by b\nthree\n", "b.txt": "b\n"})
    with within(60, "merge a, then b in conflict"):
        await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
        assert (await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(), merges)).state is MergeState.CONFLICT
    with within(30, "b back to its worker"):
        again = await claim(GIT, dev2, "b-002")
        assert again.conflicts == ("shared.txt",)
        write(os.path.join(dev2.path, "shared.txt"), "one\nTWO by a and b\nthree\n")
        await complete(GIT, dev2, "b-002")
    with within(60, "merge b again"):
        outcome = await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(), merges)
    assert outcome.state is MergeState.MERGED, outcome
    assert git(repo, "show", "main:shared.txt") == "one\nTWO by a and b\nthree" and git(repo, "show", "main:b.txt")
    assert git(repo, "rev-list", "--merges", "main") == "" and status(repo) == ""
    assert git(repo, "log", "-1", "--format=%an|%s", "main") == "dev2|b-002: its branch as one commit"


async def test_a_rebase_of_the_base_in_progress_in_repo_blocks(repo, root):
    dev1 = await bead_a(repo, root)
    git(repo, "switch", "-q", "-c", "side", "main")
    commit_file(repo, "README", "side's README\n")
    git(repo, "switch", "-q", "main")
    commit_file(repo, "README", "main's README\n")
    git(repo, "rebase", "side", check=False)  # stops at the conflict, HEAD detached, main being rebased
    assert mid_operation(repo) == ["rebase-merge"], "the test must leave REPO mid-rebase"
    before = snapshot(repo)
    merges = merge_path_for(root, repo)
    with within(60, "merge"):
        outcome = await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)
    assert outcome.state is MergeState.BLOCKED and outcome.detail.startswith("a rebase of main is in progress")
    assert snapshot(repo) == before
    git(repo, "rebase", "--abort")
    with within(60, "merge once the rebase is over"):
        assert (await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)).state is MergeState.MERGED


async def test_the_same_entry_stepped_twice_at_once_is_merged_once(repo, root):
    dev1 = await bead_a(repo, root)
    merges, outcomes = merge_path_for(root, repo), []

    async def step() -> None:
        outcomes.append(await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(gates=(GATE_SLOW,)), merges))

    with within(60, "two steps at once"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(step)
            nursery.start_soon(step)
    assert [o.state for o in outcomes] == [MergeState.MERGED, MergeState.MERGED]
    assert git(repo, "log", "--format=%s", "main").splitlines().count("a-001") == 1


async def test_repos_own_config_cannot_change_what_the_engine_does(repo, root, tmp_path):
    for key, value in (("merge.ff", "only"), ("rebase.autoSquash", "true"), ("rebase.autoStash", "true"),
                       ("rebase.updateRefs", "true"), ("rebase.rebaseMerges", "true"), ("diff.external", "false"),
                       ("core.hooksPath", str(tmp_path / "hooks")), ("commit.gpgSign", "true"),
                       ("commit.verbose", "true")):
        git(repo, "config", key, value)
    write(str(tmp_path / "hooks" / "pre-commit"), "#!/bin/sh\nexit 1\n")
    os.chmod(tmp_path / "hooks" / "pre-commit", 0o755)
    dev1, dev2, merges = await two_beads(repo, root, {"shared.txt": "one\nTWO by a\nthree\n"},
                                         {"shared.txt": "one\nTWO by b\nthree\n"})
    with within(30, "bead c"):
        c_tip = (await finished_bead(dev1, "c-003", {"c.txt": "from c\n"})).tip
    git(repo, "branch", "mine", c_tip)  # a branch of the user's inside what the rebase of c rewrites
    with within(60, "a merged, b in conflict, c rebased"):
        assert (await merge_step(GIT, entry_for(dev1, "a-001"), MergeConfig(), merges)).state is MergeState.MERGED
        assert (await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(), merges)).state is MergeState.CONFLICT
        assert (await merge_step(GIT, entry_for(dev1, "c-003"), MergeConfig(), merges)).state is MergeState.MERGED
    assert tip(repo, "mine") == c_tip != tip(repo, "anvil/bead/c-003")  # rebase.updateRefs did not move it
    with within(60, "b resolved, and merged"):
        assert (await claim(GIT, dev2, "b-002")).conflicts == ("shared.txt",)
        await finished_bead(dev2, "b-002", {"shared.txt": "one\nTWO by both\nthree\n"})
        outcome = await merge_step(GIT, entry_for(dev2, "b-002"), MergeConfig(), merges)
    assert outcome.state is MergeState.MERGED, outcome
    assert git(repo, "show", "main:shared.txt") == "one\nTWO by both\nthree" and status(repo) == ""
