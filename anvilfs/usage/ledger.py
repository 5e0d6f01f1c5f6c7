"""Every turn's usage, a row each in STATE/anvilfs.db, and its sums per session, bead, convoy and in all.

    turn_usage   a row per ended turn: (session row, turn number) -> the session's name then, what its
                 CLI reported (usage/model.py), and the beads and convoys it counts to (those its session
                 held while it ran: the app level says which, spending.py)

A turn's row is written in the same job as the session's save that ends the
turn (sessions/store.py calls ``insert``), so no commit has a turn ended and
not counted, or counted twice: the key is (session, turn), and a row once
written is never replaced (a save tried again writes the same row, ignored).

The sums live in memory, made at start from the table (one GROUP BY each)
and moved by ``count`` as turns end; a convoy and the total count a turn
once, however many of its beads it counts to. Nothing here knows what a
session, bead or convoy is beyond its name.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from .model import TOKEN_KEYS, ZERO, Usage

SCHEMA = """
CREATE TABLE IF NOT EXISTS turn_usage (
    session INTEGER NOT NULL, turn INTEGER NOT NULL, name TEXT NOT NULL, at TEXT NOT NULL,
    input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL, cost_usd REAL, beads TEXT NOT NULL DEFAULT '[]',
    convoys TEXT NOT NULL DEFAULT '[]', PRIMARY KEY (session, turn)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS budgets (
    scope TEXT NOT NULL, key TEXT NOT NULL, usd REAL, tokens INTEGER, PRIMARY KEY (scope, key)) WITHOUT ROWID;
"""

_COLUMNS = ("session", "turn", "name", "at", *TOKEN_KEYS, "cost_usd", "beads", "convoys")
INSERT = f"INSERT OR IGNORE INTO turn_usage ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
# the sums of a set of rows, as Usage(**): tokens, the reported costs (NULL if none), turns, unpriced turns
_SUMS = ", ".join(f"sum({key})" for key in TOKEN_KEYS) + ", sum(cost_usd), count(*), count(*) - count(cost_usd)"


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One ended turn, as counted."""

    session: int  # the session's row in the sessions table (a name may be used again after a removal)
    turn: int
    name: str
    at: str
    usage: Usage
    beads: frozenset[str] = frozenset()
    convoys: frozenset[str] = frozenset()

    def values(self) -> tuple:
        u = self.usage
        return (self.session, self.turn, self.name, self.at, *(getattr(u, key) for key in TOKEN_KEYS), u.cost_usd,
                json.dumps(sorted(self.beads)), json.dumps(sorted(self.convoys)))


def insert(conn, record: TurnRecord) -> None:
    """The turn's row, in the writer's job that saves its session (sessions/store.py)."""
    conn.execute(INSERT, record.values())


@dataclass(slots=True)
class _Account:
    total: Usage = ZERO
    last: Usage | None = None
    name: str = ""


@dataclass(slots=True)
class Ledger:
    """The sums of every turn counted, by session row, bead and convoy, and in all."""

    sessions: dict[int, _Account] = field(default_factory=lambda: defaultdict(_Account))
    beads: dict[str, Usage] = field(default_factory=lambda: defaultdict(lambda: ZERO))
    convoys: dict[str, Usage] = field(default_factory=lambda: defaultdict(lambda: ZERO))
    total: Usage = ZERO
    version: int = 0  # moves with each turn counted: the files' stamp

    def count(self, record: TurnRecord) -> None:
        turn = record.usage.as_turn()
        account = self.sessions[record.session]
        account.total, account.last, account.name = account.total + turn, turn, record.name
        for bead in record.beads:
            self.beads[bead] = self.beads[bead] + turn
        for convoy in record.convoys:
            self.convoys[convoy] = self.convoys[convoy] + turn
        self.total = self.total + turn
        self.version += 1

    def session(self, row: int) -> tuple[Usage, Usage | None]:
        account = self.sessions.get(row)
        return (account.total, account.last) if account is not None else (ZERO, None)

    def bead(self, bead: str) -> Usage:
        return self.beads.get(bead, ZERO)

    def convoy(self, convoy: str) -> Usage:
        return self.convoys.get(convoy, ZERO)

    def load(self, db) -> None:
        """The sums of the rows on disk, before any turn runs."""
        for row, name, *sums in db.read(f"SELECT session, max(name), {_SUMS} FROM turn_usage GROUP BY session"):
            account = self.sessions[row]
            account.total, account.name = _usage(sums), name
        for row, *last in db.read(f"SELECT u.session, {_SUMS} FROM turn_usage u JOIN (SELECT session, max(turn) AS turn "
                                  "FROM turn_usage GROUP BY session) m USING (session, turn) GROUP BY u.session"):
            self.sessions[row].last = _usage(last)
        for table, column in ((self.beads, "beads"), (self.convoys, "convoys")):
            for key, *sums in db.read(f"SELECT j.value, {_SUMS} FROM turn_usage, json_each(turn_usage.{column}) j "
                                      "GROUP BY j.value"):
                table[key] = _usage(sums)
        for sums in db.read(f"SELECT {_SUMS} FROM turn_usage"):
            if sums[-2]:
                self.total = _usage(sums)
        self.version += 1


def _usage(sums) -> Usage:
    *tokens, cost, turns, unpriced = sums
    return Usage(*(int(t or 0) for t in tokens), cost_usd=cost, turns=turns, unknown_cost_turns=unpriced)
