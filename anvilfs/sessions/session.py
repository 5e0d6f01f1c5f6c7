"""One session's observable state: status, queue, turns, output, transcript.

This is plain data plus the rules of SPEC §5; the runner in manager.py
drives it and the files in anvilfs.fs read it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..journal import timestamp
from ..waitable import Changes
from .backend import Agent, Backend, SessionInfo
from .states import BUSY, Event, State, advance


@dataclass(slots=True)
class Prompt:
    text: str
    sender: str


@dataclass(slots=True)
class Turn:
    """The output of one turn as it streams in; ``changes`` bumps per write."""

    number: int
    chunks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for the log only (stderr, diagnostics)
    done: bool = False
    changes: Changes = field(default_factory=Changes)

    def write(self, text: str) -> None:
        if text:
            self.chunks.append(text)
            self.changes.bump()

    def note(self, text: str) -> None:
        if text:
            self.notes.append(text)

    def finish(self) -> None:
        self.done = True
        self.changes.bump()

    def text(self) -> str:
        return "".join(self.chunks)


class Session:
    """A session: its definition, state, prompt queue and what it has said."""

    def __init__(self, info: SessionInfo, backend: Backend, agent: Agent, *, ephemeral: bool, on_change):
        self.info = info
        self.backend = backend
        self.agent = agent
        self.ephemeral = ephemeral
        self.state = State.STARTING
        self.detail = ""  # why it is in error / exited, shown after the state word
        self.queue: deque[Prompt] = deque()
        self.turn: Turn | None = None  # the current or last turn
        self.turn_count = 0
        self.out = ""
        self.transcript: list[str] = []
        self.changes = Changes()  # bumps on every state, queue or turn change
        self._on_change = on_change

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def simulated(self) -> bool:
        return self.backend.simulated

    @property
    def busy(self) -> bool:
        return self.state in BUSY or bool(self.queue)

    def status_line(self) -> str:
        """The state word first; then details (why it failed, `simulated`)."""
        words = [self.state.value]
        if self.detail:
            words.append(self.detail)
        if self.simulated:
            words.append("(simulated)" if self.detail else "simulated")
        return " ".join(words)

    def move(self, event: Event, detail: str = "") -> None:
        before = self.state
        self.state = advance(self.state, event)
        self.detail = detail
        self.changes.bump()
        self._on_change(self, before, event)

    def enqueue(self, prompt: Prompt) -> None:
        self.queue.append(prompt)
        self.changes.bump()

    def begin_turn(self, prompt: Prompt) -> Turn:
        self.turn_count += 1
        self.turn = Turn(self.turn_count)
        self.transcript.append(f"--- prompt {self.turn_count} from {prompt.sender} at {timestamp()}\n{_ends_line(prompt.text)}")
        self.move(Event.TURN_BEGAN)
        return self.turn

    def end_turn(self, event: Event, detail: str = "") -> None:
        turn = self.turn
        assert turn is not None
        text = turn.text()
        turn.finish()
        if event is Event.TURN_DONE:
            self.out = text
        outcome = "answer" if event is Event.TURN_DONE else f"failed: {detail}"
        self.transcript.append(f"--- {outcome} {turn.number} at {timestamp()}\n{_ends_line(text)}")
        self.move(event, detail)

    def abort_turn(self, reason: str) -> None:
        """End the current turn without an answer, leaving the state to the caller."""
        turn = self.turn
        if turn is not None and not turn.done:
            turn.finish()
            self.transcript.append(f"--- {reason}, turn {turn.number} at {timestamp()}\n{_ends_line(turn.text())}")

    def log_text(self) -> str:
        return "".join(self.transcript)


def _ends_line(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
