"""Budgets: how much a session, or the sessions at work on a convoy's beads, may spend (docs/usage.md).

A budget is dollars (`budget`), tokens (`token_budget`: the four kinds
summed, usage/model.py), or both; it is spent once what was counted
reaches it. Only what the CLIs reported counts: a session whose CLI
reports no cost is held to its money budget by nothing it spends (its
`unpriced_turns` say so); give it a token budget.

    budgets    a row per budget set after the fact (a ctl's `budget USD`), by scope ("session", with the
               session's row as key; "convoy", with its id); a session's budget given at `new` is in its
               definition, and a row of its own replaces it
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InvalidRequest
from .model import Usage

MAX_USD = 1_000_000.0  # a typo's guard: a budget is for stopping spending, not for bookkeeping
MAX_TOKENS = 10**15


@dataclass(frozen=True, slots=True)
class Budget:
    usd: float | None = None
    tokens: int | None = None

    def spent(self, usage: Usage, whose: str, raise_at: str) -> str:
        """Why this budget stops the next turn ("" if it does not): `whose` (e.g. "session dev") spent it;
        `raise_at`: the ctl that raises it."""
        if self.usd is not None and usage.known_cost >= self.usd:
            return (f"budget spent: {whose} spent ${usage.known_cost:.4f} of its ${self.usd:g} (write 'budget USD' "
                    f"to {raise_at} to raise it)")
        if self.tokens is not None and usage.tokens >= self.tokens:
            return (f"budget spent: {whose} spent {usage.tokens} tokens of its {self.tokens} (write 'token_budget N'"
                    f" to {raise_at} to raise it)")
        return ""

    def usd_left(self, usage: Usage) -> float | None:
        return None if self.usd is None else max(self.usd - usage.known_cost, 0.0)

    def updated(self, usd: float | None = None, tokens: int | None = None) -> Budget:
        """This budget with the figure a ctl wrote replaced, the other kept."""
        return Budget(self.usd if usd is None else usd, self.tokens if tokens is None else tokens)

    def lines(self) -> str:
        """`budget_usd` and `token_budget` lines of a `usage` file: the value, or `none`."""
        usd = "none" if self.usd is None else f"{self.usd:g}"
        return f"budget_usd {usd}\ntoken_budget {'none' if self.tokens is None else self.tokens}\n"


NONE = Budget()


def parse_usd(text: str, where: str) -> float:
    """Dollars as written in `budget=USD` or `budget USD`: a number > 0 (`$` allowed before it)."""
    try:
        value = float(text.removeprefix("$"))
    except ValueError:
        value = math.nan
    if not (0 < value <= MAX_USD):  # also NaN and inf
        raise InvalidRequest(f"{where}: give dollars as a number above 0 and at most {MAX_USD:g}, e.g. 5 or 0.50: "
                             f"{text!r} is not one")
    return value


def parse_tokens(text: str, where: str) -> int:
    """Tokens as written in `token_budget=N`: a whole number > 0, in ASCII digits."""
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) <= MAX_TOKENS:
        raise InvalidRequest(f"{where}: give tokens as a whole number above 0, e.g. 200000: {text!r} is not one")
    return int(text)


class BudgetTable:
    """The budgets set after the fact, in the database; read whole at start (they are few)."""

    def __init__(self, db):
        self.db = db
        self.rows: dict[tuple[str, str], Budget] = {}
        self.version = 0  # moves with each budget set: the files that show them follow it
        if db is not None:
            for scope, key, usd, tokens in db.read("SELECT scope, key, usd, tokens FROM budgets"):
                self.rows[(scope, key)] = Budget(usd, tokens)

    @property
    def convoys(self) -> bool:
        """Is any convoy's budget set? (Without one, no session needs its beads looked at.)"""
        return any(scope == "convoy" for scope, _ in self.rows)

    def get(self, scope: str, key: str) -> Budget | None:
        return self.rows.get((scope, key))

    def set(self, scope: str, key: str, budget: Budget):
        """Set it now; the Commit (None without a database) is what the write that set it waits for."""
        self.rows[(scope, key)] = budget
        self.version += 1
        if self.db is None:
            return None
        return self.db.execute("INSERT OR REPLACE INTO budgets (scope, key, usd, tokens) VALUES (?, ?, ?, ?)",
                               (scope, key, budget.usd, budget.tokens))
