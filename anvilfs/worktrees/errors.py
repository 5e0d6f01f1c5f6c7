"""The errors of the worktree engine: each says what was wrong and what to do, with the errno it maps to.

    AnvilError (anvilfs.errors)          EIO
    ├── GitFailed                        EIO     a git command failed (its stderr is in the text)
    │   └── GitTimedOut                  EIO     a git command did not finish within its time
    ├── InvalidRequest
    │   └── BadName                      EINVAL  a session name, bead id or base that git cannot take
    └── Busy
        ├── DirtyWorktree                EBUSY   uncommitted work stands in the way
        ├── UnresolvedConflict           EBUSY   a bead's merge of its base still has conflicts
        └── StepRunning                  EBUSY   a merge step of a killed process still runs

The engine raises these; the tree (once wired) hands them to clients as they are.
"""

from __future__ import annotations

from ..errors import AnvilError, Busy, InvalidRequest


class GitFailed(AnvilError):
    """A git command that exited non-zero where it must not; the text carries git's own words."""


class GitTimedOut(GitFailed):
    pass


class BadName(InvalidRequest):
    pass


class DirtyWorktree(Busy):
    def __init__(self, message: str, paths: tuple[str, ...] = ()):
        super().__init__(message, detail="\n".join(paths))
        self.paths = paths


class UnresolvedConflict(Busy):
    def __init__(self, message: str, paths: tuple[str, ...] = ()):
        super().__init__(message, detail="\n".join(paths))
        self.paths = paths


class StepRunning(Busy):
    pass
