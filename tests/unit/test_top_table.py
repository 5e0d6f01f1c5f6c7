"""`anvilfs top`'s table and how it reads `events` lines (anvilfs/client/top.py), without a server."""

from __future__ import annotations

from anvilfs.client.top import remember, table


def test_the_table_aligns_its_columns_and_a_terminal_cuts_its_lines():
    rows = [("bot1", "await", "reviewer", "0", "11:33:00 await simulated"), ("developer-2", "running", "-", "12", "-")]
    assert table(rows).splitlines() == [
        "NAME         STATUS   ROLE      QUEUE  LAST EVENT",
        "bot1         await    reviewer  0      11:33:00 await simulated",
        "developer-2  running  -         12     -",
    ]
    assert [len(line) for line in table(rows, width=20).splitlines()] == [20, 20, 20]
    assert table([]) == "NAME  STATUS  ROLE  QUEUE  LAST EVENT\n"


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
