"""The durable records of worktree sessions and the merge queue: three tables of STATE/anvilfs.db.

    worktrees      a row per worktree anvilfs made for a session: where, on which repository, from which base,
                   its idle branch, and `live` (0 once its session is removed: the worktree may be kept)
    bead_branches  a row per bead a worktree session claimed: its branch, repository, base and session
    merges         a row per bead whose branch was queued: its state (model.MergeState, or `dropped`), the
                   one-line detail, and `seq`, the order of the queue

The engine re-reads git at every call, so a row that outlived a crash is
never trusted further than git agrees: these say what anvilfs asked for,
git says what is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..storage.database import Commit, Database
from ..worktrees import MergeState, SessionWorktree

SCHEMA = """
CREATE TABLE IF NOT EXISTS worktrees (
    path TEXT PRIMARY KEY, session TEXT NOT NULL, repo TEXT NOT NULL, base TEXT NOT NULL, branch TEXT NOT NULL,
    live INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS bead_branches (
    bead TEXT PRIMARY KEY, branch TEXT NOT NULL, repo TEXT NOT NULL, base TEXT NOT NULL, session TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS merges (
    bead TEXT PRIMARY KEY, seq INTEGER NOT NULL, branch TEXT NOT NULL, repo TEXT NOT NULL, base TEXT NOT NULL,
    session TEXT NOT NULL, state TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '');
"""

DROPPED = "dropped"  # an entry taken off the queue by `drop`: kept, so that nothing queues it again by itself


@dataclass(frozen=True, slots=True)
class BeadBranch:
    bead: str
    branch: str
    repo: str
    base: str
    session: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One bead in the merge queue."""

    bead: str
    seq: int
    branch: str
    repo: str
    base: str
    session: str
    state: str  # a MergeState value, or DROPPED
    detail: str = ""

    def moved(self, state: str, detail: str = "") -> Entry:
        return replace(self, state=state, detail=detail)

    def line(self) -> str:
        return f"{self.bead} {self.branch} {self.state}" + (f" {self.detail}" if self.detail else "") + "\n"


class Records:
    """The three tables; reads at start, every change one job of the database's writer (answered once on disk)."""

    def __init__(self, db: Database | None):
        self.db = db

    def worktrees(self) -> list[tuple[SessionWorktree, bool]]:
        return [(SessionWorktree(session, repo, path, base, branch), bool(live)) for path, session, repo, base,
                branch, live in self._read("SELECT path, session, repo, base, branch, live FROM worktrees")]

    def bead_branches(self) -> list[BeadBranch]:
        return [BeadBranch(*row) for row in self._read("SELECT bead, branch, repo, base, session FROM bead_branches")]

    def entries(self) -> list[Entry]:
        return [Entry(*row) for row in self._read(
            "SELECT bead, seq, branch, repo, base, session, state, detail FROM merges ORDER BY seq")]

    def _read(self, sql: str) -> list[tuple]:
        return [] if self.db is None else self.db.read(sql)

    def save_worktree(self, wt: SessionWorktree, live: bool) -> Commit | None:
        return self._execute("INSERT OR REPLACE INTO worktrees (path, session, repo, base, branch, live) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (wt.path, wt.session, wt.repo, wt.base, wt.branch, int(live)))

    def save_bead_branch(self, b: BeadBranch) -> Commit | None:
        return self._execute("INSERT OR REPLACE INTO bead_branches (bead, branch, repo, base, session) "
                             "VALUES (?, ?, ?, ?, ?)", (b.bead, b.branch, b.repo, b.base, b.session))

    def save_entry(self, e: Entry) -> Commit | None:
        return self._execute("INSERT OR REPLACE INTO merges (bead, seq, branch, repo, base, session, state, detail) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             (e.bead, e.seq, e.branch, e.repo, e.base, e.session, e.state, e.detail))

    def _execute(self, sql: str, params: tuple) -> Commit | None:
        return None if self.db is None else self.db.execute(sql, params)


def is_waiting(entry: Entry) -> bool:
    return entry.state == MergeState.QUEUED.value
