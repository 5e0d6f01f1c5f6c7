"""What agents spent, as files (SPEC §3, docs/usage.md), and the ctl words that set budgets.

    agent/usage            a line per session (removed ones together), then the total
    agent/NAME/usage       KEY VALUE lines: the session's totals, its last turn's (last_...), its budgets
    agent/NAME/ctl         budget USD | token_budget N
    beads/ID/usage         every turn of a session while it held the bead
    beads/usage            a line per bead some turn counted to, as agent/usage's: one read for every bead
    convoys/ID/usage       every turn that counted to one of its beads, once; and its budgets
    convoys/usage          a line per convoy some turn counted to
    convoys/ID/ctl         budget USD | token_budget N: shared by the sessions holding its beads

Every file follows the ledger's and the budgets' versions (stamps.py): a
stat renders nothing until a turn was counted or a budget set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..sessions import Session
from ..sessions.acting import check_budget_setter
from ..spending import Spending
from ..tree import Args, Command, Node, TextFile
from ..usage.budgets import parse_tokens, parse_usd
from ..usage.model import ZERO, Usage, figures, usage_lines
from .stamps import follows

REMOVED = "(removed)"  # the line of sessions removed, together; no session can be named so
TOTAL = "(total)"


@dataclass(frozen=True, slots=True)
class UsageFiles:
    spending: Spending
    # agent/usage's line of each session: (its name, the total it shows, the line), made again only when
    # the session's total is another object (the ledger replaces a total when it counts a turn): a turn
    # counted rendered 1,000 lines again, 3.5 ms of the loop at each change a benchmark made (issue 32)
    _lines: dict[int, tuple[str, Usage, str]] = field(default_factory=dict, compare=False, repr=False)
    # [roster, {row: name}]: the live sessions sorted by name as of sessions.roster (_roster); building and
    # sorting them was half of a render (issue 32)
    _sorted: list = field(default_factory=lambda: [None, {}], compare=False, repr=False)

    def _follows(self, node: TextFile) -> Node:
        ledger, budgets = self.spending.ledger, self.spending.budgets
        return follows(node, lambda: (ledger.version, budgets.version))

    # ------------------------------------------------------------ sessions

    def root_file(self) -> Node:
        ledger, sessions = self.spending.ledger, self.spending.sessions
        # not sessions.version, which moves with every state: 1,000 lines rendered again at each turn's start
        return follows(TextFile("usage", "usage", self._all), lambda: (ledger.version, sessions.roster))

    def _roster(self) -> dict[int, str]:
        """Each live session's row and name, sorted by name: made again only when a session was made or
        removed (a live session keeps its name; restore renames before serving), or when one had no row yet
        (0: made in the step that saves it, so never seen here; if it were, the next look makes it anew)."""
        sessions = self.spending.sessions
        if self._sorted[0] != sessions.roster or 0 in self._sorted[1]:
            self._sorted[:] = [sessions.roster, dict(sorted(((s.row, s.name) for s in sessions.all()),
                                                            key=lambda item: item[1]))]
        return self._sorted[1]

    def _all(self) -> str:
        ledger, live = self.spending.ledger, self._roster()
        lines, removed, kept = [], ZERO, self._lines
        words: dict[int, str] = {}  # a total's figures by its id, made once a render: every session without a
        for row, name in live.items():  # turn shows ZERO (a first render of 1,000 lines: 4-5 ms, issue 32)
            total = ledger.session(row)[0]
            line = kept.get(row)
            if line is None or line[1] is not total or line[0] != name:
                line = kept[row] = (name, total, _line(name, total, words))
            lines.append(line[2])
        for row, account in ledger.sessions.items():
            if row not in live:
                removed = removed + account.total
        if len(kept) > len(live):  # a session removed: its line goes
            for row in [row for row in kept if row not in live]:
                del kept[row]
        return "".join(lines) + _line(REMOVED, removed) + _line(TOTAL, ledger.total)

    def session_file(self, session: Session) -> Node:
        def render() -> str:
            total, last = self.spending.ledger.session(session.row)
            return usage_lines(total, last) + self.spending.session_budget(session).lines()
        return self._follows(TextFile("usage", f"session/{session.name}/usage", render))

    def session_commands(self, name: str) -> list[Command]:
        return _budget_commands(self.spending, lambda **value: self.spending.set_session_budget(name, **value))

    # ------------------------------------------------------------ beads and convoys

    def summary_file(self, kind: str) -> Node:
        """`beads/usage` or `convoys/usage`: a line per bead (convoy) with a turn counted, by id; what a page
        or `anvilfs top` reads once instead of one file per bead (10,000 beads: issue 32)."""
        ledger = self.spending.ledger
        sums = ledger.beads if kind == "beads" else ledger.convoys

        def render() -> str:
            return "".join(_line(key, sums[key]) for key in sorted(sums) if sums[key].turns)
        return follows(TextFile("usage", f"{kind}/usage", render), lambda: ledger.version)

    def bead_files(self, bead_id: str) -> list[Node]:
        return [self._follows(TextFile("usage", f"bead/{bead_id}/usage",
                                       lambda: usage_lines(self.spending.ledger.bead(bead_id))))]

    def convoy_files(self, convoy_id: str) -> list[Node]:
        def render() -> str:
            spending = self.spending
            return usage_lines(spending.ledger.convoy(convoy_id)) + spending.convoy_budget(convoy_id).lines()
        return [self._follows(TextFile("usage", f"convoy/{convoy_id}/usage", render))]

    def convoy_commands(self, convoy_id: str) -> list[Command]:
        return _budget_commands(self.spending, lambda **value: self.spending.set_convoy_budget(convoy_id, **value))


def _budget_commands(spending: Spending, set_budget) -> list[Command]:
    """`budget USD` and `token_budget N`: set_budget(usd=...) or set_budget(tokens=...), by no agent."""
    def setting(word: str, parse, key: str):
        def run(args: Args) -> None:
            check_budget_setter(spending.sessions.find, args.caller.uname if args.caller else "", word)
            set_budget(**{key: parse(args.words[0], word)})
        return run

    return [Command("budget", setting("budget", parse_usd, "usd"), "budget <USD>", min_words=1, max_words=1),
            Command("token_budget", setting("token_budget", parse_tokens, "tokens"), "token_budget <N>",
                    min_words=1, max_words=1)]


def _line(name: str, usage: Usage, words: dict[int, str] | None = None) -> str:
    """NAME turns=N input_tokens=N ... cost_usd=X unpriced_turns=N: one line per session of agent/usage;
    `words` keeps a total's figures by its id for the rest of one render (the totals outlive it)."""
    said = words.get(id(usage)) if words is not None else None
    if said is None:
        said = " ".join(f"{key}={value}" for key, value in figures(usage))
        if words is not None:
            words[id(usage)] = said
    return f"{name} {said}\n"
