"""`anvilfs top`'s table and how it reads `events` lines (anvilfs/client/top.py), without a server."""

from __future__ import annotations

import pytest

from anvilfs.client import spent
from anvilfs.client.top import View, remember, table


def test_the_table_aligns_its_columns_and_a_terminal_cuts_its_lines():
    rows = [("bot1", "await", "reviewer", "0", "$0.25", "11:33:00 await simulated"),
            ("developer-2", "running", "-", "12", "-", "-")]
    assert table(rows).splitlines() == [
        "NAME         STATUS   ROLE      QUEUE  SPENT  LAST EVENT",
        "bot1         await    reviewer  0      $0.25  11:33:00 await simulated",
        "developer-2  running  -         12     -      -",
    ]
    assert [len(line) for line in table(rows, width=20).splitlines()] == [20, 20, 20]
    assert table([]) == "NAME  STATUS  ROLE  QUEUE  SPENT  LAST EVENT\n"


def test_a_screen_has_no_blank_line_within_and_ends_with_the_total():
    # in a pipe a blank line separates one screen from the next
    view = View([("a", "await", "-", "0", "$1.50", "-")], "total spent $1.50 in 1 turn, 30 tok",
                [("ship-001", "in_progress", "1/2", "$1.50", "ship it")])
    assert view.text().splitlines() == [
        "NAME  STATUS  ROLE  QUEUE  SPENT  LAST EVENT",
        "a     await   -     0      $1.50  -",
        "CONVOY    STATUS       DONE  SPENT  TITLE",
        "ship-001  in_progress  1/2   $1.50  ship it",
        "total spent $1.50 in 1 turn, 30 tok",
    ]
    assert max(len(line) for line in view.text(width=12).splitlines()) == 12


TOKENS = {"input_tokens": "1000", "output_tokens": "200", "cache_read_tokens": "30", "cache_write_tokens": "4"}


@pytest.mark.parametrize(("figures", "shown"), [
    (None, "-"),  # a session made after agent/usage was read
    ({"turns": "0", "cost_usd": "0.000000", "unpriced_turns": "0"}, "-"),
    ({"turns": "2", "cost_usd": "0.250000", "unpriced_turns": "0"} | TOKENS, "$0.25"),
    ({"turns": "3", "cost_usd": "0.250000", "unpriced_turns": "1"} | TOKENS, "$0.25+"),  # a turn reported no cost
    ({"turns": "1", "cost_usd": "unknown", "unpriced_turns": "1"} | TOKENS, "1.2k tok"),  # never a made-up price
    ({"turns": "1", "cost_usd": "unknown", "unpriced_turns": "1", "input_tokens": "0"}, "unknown"),  # nothing said
    ({"turns": "1", "cost_usd": "0.003400", "unpriced_turns": "0"}, "$0.0034"),
    ({"turns": "9", "cost_usd": "1234.5", "unpriced_turns": "0"}, "$1234"),
])
def test_a_spending_cell_is_the_cost_reported_or_else_the_tokens(figures, shown):
    assert spent.cell(figures) == shown


@pytest.mark.parametrize(("n", "shown"), [(0, "0"), (999, "999"), (1234, "1.2k"), (56789, "57k"), (999600, "1.0M"),
                                          (3_400_000, "3.4M")])
def test_token_counts_are_three_figures_at_most(n, shown):
    assert spent.count(n) == shown


def test_the_total_line_is_agent_usage_s_total_with_the_removed_sessions():
    listing = spent.lines("a turns=1 cost_usd=0.500000 unpriced_turns=0 input_tokens=10 output_tokens=2\n"
                          "(removed) turns=1 cost_usd=unknown unpriced_turns=1 input_tokens=40 output_tokens=4\n"
                          "(total) turns=2 cost_usd=0.500000 unpriced_turns=1 input_tokens=50 output_tokens=6\n")
    assert spent.total_line(listing) == "total spent $0.50+ in 2 turns, 56 tok (removed sessions: 44 tok)"
    assert spent.total_line(spent.lines("(total) turns=0 cost_usd=0.000000\n")) == \
        "total spent: nothing yet (no turn counted)"
    assert spent.total_line(spent.lines("(total) turns=1 cost_usd=unknown input_tokens=0\n")) == \
        "total spent: unknown, 1 turn and no usage reported"


def test_a_session_s_last_event_is_its_last_line_and_other_lines_are_not_a_session_s():
    last: dict[str, str] = {}
    for line in ["2026-12-01T11:33:00Z bot1 running",
                 "2026-12-01T11:33:01Z bot1 await simulated",
                 "2026-12-01T11:33:02Z - error ctl: bad command",
                 "2026-12-01T11:33:03Z bead:impl-001 claimed in_progress bot1",
                 "2026-12-01T11:33:04Z mail:1796117706036311 QUERY_REQUEST from bot1 to human: hi",
                 "2026-12-01T11:33:05Z bot2 prompt of 0 bytes from glenda ignored: nothing to run",
                 "garbage"]:
        remember(last, line)
    assert last == {"bot1": "11:33:01 await simulated", "bot2": "11:33:05 prompt of 0 bytes from glenda ignored: nothing to run"}
