"""Complete a bead in a session's worktree, in a process of its own (for test_worktree_kill's kill points).

    python session_runner.py WORKTREE_JSON BEAD

WORKTREE_JSON is the SessionWorktree record, as the caller would keep it.
"""

from __future__ import annotations

import json
import sys

import trio

from anvilfs.worktrees import Git, SessionWorktree, complete


async def main(record: str, bead: str) -> None:
    done = await complete(Git(timeout=60), SessionWorktree(**json.loads(record)), bead, "by the runner")
    print(json.dumps(done.own_commits))


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
