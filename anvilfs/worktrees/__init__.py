"""The git engine of worktree sessions: a worktree per session, a branch per bead, a merge queue's step.

A domain package: it knows nothing of 9P, of the tree or of the storage
format. It takes and returns plain records (model.py) that the caller
persists; git's own state is the truth it re-reads at every call. The rules
and the team workflow are in docs/worktrees.md.

    create(git, repo, root, session, base)  -> SessionWorktree
    claim(git, worktree, bead)               -> Claimed
    complete(git, worktree, bead, title)     -> Completed
    merge_step(git, entry, config, path)     -> MergeOutcome
    repair(git, repo, merge_path)            -> Repaired (at start)
    setup(path, config)                      -> CommandFailed | None (a new worktree's setup commands)
    list_worktrees(git, repo, root, live)    -> [WorktreeInfo]
    prune(git, repo, root, base, live)       -> ([removed paths], [deleted branches])
"""

from .commands import CommandFailed, setup
from .errors import BadName, DirtyWorktree, GitFailed, GitTimedOut, StepRunning, UnresolvedConflict
from .git import ANVILFS, Git, Identity
from .listing import list_worktrees, prune, remove_if_merged
from .merge import merge_step, repair
from .mergework import merge_path_for
from .model import (Base, Claimed, Completed, MergeConfig, MergeEntry, MergeMode, MergeOutcome, MergeState,
                    Repaired, SessionWorktree, WorktreeInfo, WorktreeState)
from .names import BEAD_PREFIX, SESSION_PREFIX, bead_branch, check_base
from .session import claim, complete, create

__all__ = [
    "ANVILFS", "BEAD_PREFIX", "BadName", "Base", "Claimed", "CommandFailed", "Completed", "DirtyWorktree", "Git", "GitFailed",
    "GitTimedOut", "Identity", "MergeConfig", "MergeEntry", "MergeMode", "MergeOutcome", "MergeState",
    "Repaired", "SESSION_PREFIX", "SessionWorktree", "StepRunning", "UnresolvedConflict", "WorktreeInfo",
    "WorktreeState", "bead_branch", "check_base", "claim", "complete", "create", "list_worktrees",
    "merge_path_for", "merge_step", "prune", "remove_if_merged", "repair", "setup",
]
