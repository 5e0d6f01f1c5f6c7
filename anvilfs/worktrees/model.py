"""What the engine returns and takes: plain frozen records the caller persists (in STATE/anvilfs.db, once wired).

The engine keeps no state of its own between calls beyond git's: a record
names a worktree or a queue entry, and every call re-reads the branches'
tips from the repository, so a record that outlived a crash is never
trusted further than git agrees with it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class WorktreeState(enum.StrEnum):
    ACTIVE = "active"  # a live session works in it
    MERGED = "merged"  # no live session; clean, no stash, everything in it is in the base: prune may remove it
    UNMERGED = "unmerged"  # no live session; holds work the base lacks: kept until that work is merged or moved
    ORPHANED = "orphaned"  # git knows it but its directory is gone, or its directory is there and git forgot it


class MergeState(enum.StrEnum):
    QUEUED = "queued"
    MERGING = "merging"
    MERGED = "merged"
    CONFLICT = "conflict"
    GATE_FAILED = "gate-failed"
    BLOCKED = "blocked"  # waits on something outside the entry: REPO's local changes, a push, a lock


class MergeMode(enum.StrEnum):
    REBASE = "rebase"  # the base's history stays linear
    MERGE = "merge"  # a merge commit per bead


@dataclass(frozen=True, slots=True)
class Base:
    """A session's base: a local branch of REPO and the tip it had when read."""

    branch: str
    tip: str

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"


@dataclass(frozen=True, slots=True)
class SessionWorktree:
    """A session's worktree: where it is, on which repository, from which base, its own idle branch."""

    session: str
    repo: str
    path: str
    base: str  # the base branch's name, fixed for the session's life; its tip is re-read at every use
    branch: str  # anvil/session/NAME (or NAME@2 ... when an earlier one is kept)


@dataclass(frozen=True, slots=True)
class Claimed:
    bead: str
    branch: str
    base_tip: str
    resumed: bool  # the bead's kept branch was checked out (and the base's tip merged into it)
    conflicts: tuple[str, ...] = ()  # files left with conflict markers for the agent to resolve


@dataclass(frozen=True, slots=True)
class Completed:
    bead: str
    branch: str
    tip: str
    committed: str | None  # the commit anvilfs made of what the agent left uncommitted, if any
    own_commits: int  # commits on the branch that the base lacks: 0 means `complete no-change: REASON` only


@dataclass(frozen=True, slots=True)
class MergeConfig:
    """The merge configuration of one repository ([repos."PATH"] once wired): never text from a client."""

    mode: MergeMode = MergeMode.REBASE
    setup: tuple[tuple[str, ...], ...] = ()  # run in the merge worktree before the gates (install dependencies)
    gates: tuple[tuple[str, ...], ...] = ()
    gate_timeout: float = 600.0
    push: bool = False
    remote: str = "origin"
    push_timeout: float = 120.0


@dataclass(frozen=True, slots=True)
class MergeEntry:
    """One queued bead: its branch, to be merged into `base` of `repo`."""

    bead: str
    branch: str
    repo: str
    base: str


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    state: MergeState
    detail: str = ""  # one line, for `agent/merges/list` and `events`
    files: tuple[str, ...] = ()  # the conflicting files
    gate: tuple[str, ...] = ()  # the gate that failed
    output: str = ""  # the tail of the failing gate's or push's output
    base_before: str = ""
    base_after: str = ""


@dataclass(frozen=True, slots=True)
class WorktreeInfo:
    path: str
    session: str
    branch: str  # "(detached)" when HEAD is detached
    state: WorktreeState
    detail: str = ""

    def line(self) -> str:
        return f"{self.path} {self.session} {self.branch} {self.state}"


@dataclass(frozen=True, slots=True)
class Repaired:
    """What the start-up repair found and did."""

    aborted: tuple[str, ...] = ()  # "PATH: rebase" for each operation it aborted
    finished: tuple[str, ...] = ()  # a checkout update a killed step left half done, completed
    stale_locks: tuple[str, ...] = field(default=())  # lock files in REPO it left for a person to judge
