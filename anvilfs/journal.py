"""Append-only line logs that readers follow: `agent/events` and `agent/errors`.

A Journal keeps the most recent lines in a ring, numbered from the start of
the server. A reader holds the number of the next line it wants; if the ring
has moved past it, the reader is told how many lines it missed.
"""

from __future__ import annotations

import time
from collections import deque
from itertools import islice

from .waitable import Changes


# What would end or split a line for a reader of a line-oriented file (str.splitlines
# splits on all of these), shown escaped instead, so text a client sent (a uname, a
# quoted command) can never forge a line of `events` or `errors`.
_LINE_BREAKERS = [*range(0x20), 0x7F, 0x85, 0x2028, 0x2029]
_ESCAPES = {c: "\\n" if c == 0x0A else "\\r" if c == 0x0D else "\\t" if c == 0x09
            else f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _LINE_BREAKERS}


def one_line(text: str) -> str:
    """`text` with every character that could break a line escaped (\\n, \\x0b, \\u2028)."""
    return text.translate(_ESCAPES)


def has_line_breakers(text: str) -> bool:
    return one_line(text) != text


def timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Journal:
    """Recent lines, each with a sequence number; ``changes`` bumps on append."""

    def __init__(self, keep: int = 1000):
        self._lines: deque[str] = deque(maxlen=keep)
        self.next_seq = 0
        self.changes = Changes()

    def append(self, text: str) -> None:
        self._lines.append(f"{timestamp()} {one_line(text)}\n")
        self.next_seq += 1
        self.changes.bump()

    @property
    def first_seq(self) -> int:
        return self.next_seq - len(self._lines)

    def since(self, seq: int) -> tuple[list[str], int]:
        """Lines from `seq` on, and how many before them were already dropped."""
        first = self.first_seq
        missed = max(0, first - seq)
        wanted = max(0, self.next_seq - max(seq, first))
        # from the right end: a reader is mostly a line or two behind, and copying the whole ring is not free
        return list(islice(reversed(self._lines), wanted))[::-1], missed

    def text(self) -> str:
        return "".join(self._lines)

    async def wait_after(self, seq: int) -> None:
        """Return once a line numbered `seq` or later exists."""
        while self.next_seq <= seq:
            await self.changes.wait_changed(self.changes.version)
