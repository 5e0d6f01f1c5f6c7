"""An Output (sessions/backend.py) that keeps what it is given: for tests of the output readers.

    output = RecordedOutput()
    reader = CodexReader(output); reader.feed(text); reader.close()
    output.stream, output.given, output.spent, output.notes
"""

from __future__ import annotations

from anvilfs.usage import Usage


class RecordedOutput:
    number = 1
    budget_usd_left = None

    def __init__(self) -> None:
        self.written: list[str] = []
        self.notes: list[str] = []
        self.given: str | None = None  # what answer() handed in
        self.reports: list[Usage] = []  # each usage() report

    def write(self, text: str) -> None:
        self.written.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def answer(self, text: str) -> None:
        self.given = text

    def usage(self, usage: Usage) -> None:
        self.reports.append(usage)

    @property
    def stream(self) -> str:
        return "".join(self.written)

    @property
    def spent(self) -> Usage | None:
        """The turn's usage: the sum of the reports, None without any (as sessions/session.py Turn sums them)."""
        return sum(self.reports[1:], self.reports[0]) if self.reports else None


def feed_in_pieces(reader, text: str, pieces: int = 7) -> None:
    """Feed a reader text as a pipe might give it, in pieces that split lines anywhere, then close it."""
    step = len(text) // pieces + 1
    for start in range(0, len(text), step):
        reader.feed(text[start:start + step])
    reader.close()
