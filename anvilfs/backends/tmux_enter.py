"""When the tmux backend presses Enter again on a prompt the program may have dropped (backends/tmux.py).

A prompt typed into a program whose input is not ready (Claude Code's, in its first seconds) keeps its
text and drops its Enter: without the hook's `running` this long after an Enter, Enter is pressed again,
on the program's first prompt only, and only while the prompt's text is still on the cursor's line: an
Enter then finds the prompt still waiting in the program's input, never a question the program asked
(a permission prompt whose default an Enter would choose).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sessions.turns import Outcome
from .tmuxpane import Pane, kept_word, still_typed

ENTER_AGAIN = 5.0  # seconds
ENTERS = 3  # at most, in all


@dataclass(slots=True)
class Unheard:
    """The Enters of a turn's prompt that the hook's `running` has not answered."""

    when: float  # the last one
    last_line: str  # the prompt's last line (tmuxpane.last_line), which the cursor's line ends with while the prompt waits
    enters: int = 1

    def due(self, pane: Pane, cursor_line: str, now: float) -> bool | None:
        """At this look at the pane: True to press Enter again now (counted here), False not now, None never
        again (the hook said `running` or `await`, to the server or to the pane, or ENTERS were pressed)."""
        if kept_word(pane) in (Outcome.HEARD, Outcome.AGENT_ENDS):
            return None
        if now - self.when < ENTER_AGAIN:
            return False
        if self.enters >= ENTERS:
            return None
        if not still_typed(cursor_line, self.last_line):
            return False  # not now: the program took the prompt, asks something an Enter would answer, or is redrawing
        self.when, self.enters = now, self.enters + 1
        return True

    def note(self) -> str:
        """What the turn's output says of the Enter just pressed again."""
        return (f"no `running` from the hook {ENTER_AGAIN:g} s after Enter, the prompt still on the cursor's line: "
                f"Enter pressed again ({self.enters} of {ENTERS})")
