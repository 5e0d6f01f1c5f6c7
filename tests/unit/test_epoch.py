"""fs/stamps.py epoch: a domain timestamp as epoch seconds, the same as strptime's answer for any text, and
without strptime for the server's own timestamps."""

from __future__ import annotations

import calendar
import random
import time

from anvilfs.fs import stamps
from anvilfs.fs.stamps import epoch


def by_strptime(when: str) -> int:
    """What epoch gave before its fast way (and gives for what that does not take)."""
    try:
        return calendar.timegm(time.strptime(when[:20], "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return 0


def test_epoch_is_strptimes_answer_for_timestamps_and_near_misses():
    cases = ["2026-12-04T13:18:53Z", "2026-12-04T13:18:53Z and more", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z",
             "2026-12-04T23:59:60Z", "2026-1-4T13:18:53Z", "", "garbage", "2026-13-04T13:18:53Z",
             "2026-12-04T24:00:00Z", "2026-12-04T13:18:53", "0000-01-01T00:00:00Z", "2026-12-04t13:18:53Z"]
    rng = random.Random(4)
    for _ in range(3000):
        text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(rng.randrange(0, 4 * 10**9)))
        at = rng.randrange(len(text))
        cases += [text, text[:at] + rng.choice("0123456789-:TZx ") + text[at + 1:]]
    assert [(when, epoch(when)) for when in cases] == [(when, by_strptime(when)) for when in cases]


def test_the_servers_own_timestamps_do_not_go_through_strptime(monkeypatch):
    def refused(*args):
        raise AssertionError("strptime called")
    monkeypatch.setattr(stamps.time, "strptime", refused)
    assert epoch("2026-12-04T13:18:53Z") == 1796390333
