"""Issue 31's scenario on the engine: five sessions on one repository, two editing the same lines of one file.

The queue merges the others and REPO's checkout follows; the conflicting
bead is reported with its file, its re-claim shows the markers, and once
resolved it merges too. Throughout: the base linear, fsck clean, every
worktree clean with nothing in progress, every bead's work kept.
"""

from __future__ import annotations

import os

from anvilfs.worktrees import MergeConfig, MergeState, claim, create, merge_path_for, merge_step
from harness.deadlines import within
from harness.worktrees import GIT, check_repository, entry_for, finished_bead, status

GATE = ("sh", "-c", "test -f README")


async def test_five_sessions_two_in_conflict(repo, root):
    work = {f"b{n}-001": (f"src/b{n}.py", f"bead = {n}\n") for n in range(1, 6)}
    work["b1-001"] = work["b2-001"] = ("shared.txt", "")  # these two edit the same line
    tips, sessions = {}, {}
    with within(60, "five sessions completing a bead each"):
        for n, bead in enumerate(work, start=1):
            sessions[bead] = await create(GIT, repo, root, f"dev{n}")
            name, text = work[bead]
            text = text or f"one\ntwo as {bead} wants it\nthree\n"
            work[bead] = (name, text)
            tips[bead] = (await finished_bead(sessions[bead], bead, {name: text})).tip
    merges, config = merge_path_for(root, repo), MergeConfig(gates=(GATE,))
    with within(120, "the queue"):
        outcomes = {bead: await merge_step(GIT, entry_for(sessions[bead], bead), config, merges) for bead in work}
    assert {bead: o.state for bead, o in outcomes.items()} == {**{b: MergeState.MERGED for b in work},
                                                                "b2-001": MergeState.CONFLICT}
    assert outcomes["b2-001"].files == ("shared.txt",)
    for bead in ("b3-001", "b4-001", "b5-001"):  # REPO's checkout followed
        assert open(os.path.join(repo, work[bead][0])).read() == work[bead][1]
    check_repository(repo, work, tips)

    with within(30, "the conflicting bead back to its worker"):
        again = await claim(GIT, sessions["b2-001"], "b2-001")
    assert again.conflicts == ("shared.txt",)
    assert "<<<<<<<" in open(os.path.join(sessions["b2-001"].path, "shared.txt")).read()
    work["b2-001"] = ("shared.txt", "one\ntwo as both want it\nthree\n")
    with within(60, "resolved, completed, merged"):
        await finished_bead(sessions["b2-001"], "b2-001", {"shared.txt": work["b2-001"][1]})
        assert (await merge_step(GIT, entry_for(sessions["b2-001"], "b2-001"), config, merges)).state \
            is MergeState.MERGED
    assert open(os.path.join(repo, "shared.txt")).read() == work["b2-001"][1] and status(repo) == ""
    check_repository(repo, work, tips)
