"""Run the merge queue's steps over a list of entries until each is merged or in conflict (for test_worktree_kill).

    python merge_runner.py REPO ROOT PROGRESS ENTRIES [GATE ARGV...]

As a server would: repair first, then one step at a time, each outcome
written to PROGRESS (a JSON file, renamed into place) only after the step
returned. The test SIGKILLs this process at random moments, or asks
anvilfs.faults to kill it at a named point (ANVILFS_TEST_KILL_AT).
"""

from __future__ import annotations

import json
import os
import sys

import trio

from anvilfs.worktrees import Git, MergeConfig, MergeEntry, MergeState, merge_path_for, merge_step, repair

TERMINAL = {MergeState.MERGED, MergeState.CONFLICT}


def load(path: str) -> dict[str, str]:
    try:
        with open(path) as file:
            return json.load(file)
    except FileNotFoundError:
        return {}


def save(path: str, progress: dict[str, str]) -> None:
    with open(path + ".new", "w") as file:
        json.dump(progress, file)
    os.rename(path + ".new", path)


async def main(repo: str, root: str, progress_path: str, entries_path: str, gate: list[str]) -> None:
    git = Git(timeout=60)
    merges = merge_path_for(root, repo)
    await repair(git, repo, merges, lock_wait=60)
    with open(entries_path) as file:
        entries = [MergeEntry(**e) for e in json.load(file)]
    config = MergeConfig(gates=(tuple(gate),) if gate else ())
    progress = load(progress_path)
    tries: dict[str, int] = {}
    while pending := [e for e in entries if progress.get(e.bead) not in TERMINAL]:
        for entry in pending:
            outcome = await merge_step(git, entry, config, merges, lock_wait=60)
            progress[entry.bead] = outcome.state.value
            save(progress_path, progress)
            print(f"step {entry.bead} {outcome.state} {outcome.detail}\n{outcome.output}", flush=True)
            tries[entry.bead] = tries.get(entry.bead, 0) + 1
            if tries[entry.bead] > 5:  # nothing here should need more: a stuck queue is the failure to show
                sys.exit(f"{entry.bead} is still {outcome.state} after 5 steps: {outcome.detail}")


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
