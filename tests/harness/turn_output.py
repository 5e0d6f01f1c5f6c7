"""An Output (sessions/backend.py) that keeps what a turn's agent gave it, for tests that drive an agent or an
output reader directly.

    output = TurnOutput(budget_usd_left=0.5)
    await agent.turn("hello", output)
    output.stream, output.given, output.spent, output.total, output.notes
"""

from __future__ import annotations

from anvilfs.usage import Usage


class TurnOutput:
    number = 1

    def __init__(self, budget_usd_left: float | None = None):
        self.budget_usd_left = budget_usd_left
        self.written: list[str] = []  # each write, as it came
        self.notes: list[str] = []
        self.spent: list[Usage] = []  # each usage report
        self.given: str | None = None  # the answer handed in whole, if one was

    def write(self, text: str) -> None:
        self.written.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def answer(self, text: str) -> None:
        self.given = text

    def usage(self, usage: Usage) -> None:
        self.spent.append(usage)

    @property
    def stream(self) -> str:
        return "".join(self.written)

    @property
    def total(self) -> Usage:
        return sum(self.spent, Usage())
