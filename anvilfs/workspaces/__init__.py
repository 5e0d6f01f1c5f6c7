"""Worktree sessions and the merge queue of one server: the git engine (anvilfs/worktrees) wired to records
in STATE/anvilfs.db and to a queue task. Sessions and beads are known here by name only."""

from .queue import MergeQueue
from .records import SCHEMA, BeadBranch, Entry, Records
from .service import DETACHED, Workspaces

__all__ = ["DETACHED", "SCHEMA", "BeadBranch", "Entry", "MergeQueue", "Records", "Workspaces"]
