"""One session's observable state: status, queue, turns, output, transcript.

This is plain data plus the rules of SPEC §5; the runner drives it, the
store saves it, and the files in anvilfs.fs read it. Its state changes only
through ``move`` (the transition table; a turn's ``begin_turn``,
``end_turn``), which calls ``on_change`` so the manager can save it and
report it; its queue only through ``arriving``, ``landed``, ``enqueue``,
``take``, ``put_back`` and ``drop_queue``; and a restart loads it with
``restore``, the one change that is no transition.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..journal import timestamp
from ..usage import Usage
from ..usage.ledger import TurnRecord
from ..waitable import Changes
from .backend import Agent, Backend
from .states import BUSY, Event, IllegalTransition, State, advance


@dataclass(frozen=True, slots=True)
class Definition:
    """What `new` said, fixed for the session's life."""

    name: str
    backend: str
    cwd: str
    role: str = ""
    model: str = ""
    ephemeral: bool = False
    conversation: str = ""
    created: str = ""
    notify: bool = False  # prompted with a notice when mail arrives (never for an ephemeral session)
    conductor: bool = False  # a bot that coordinates others: its tools also prompt, start and wait on sessions
    worktree: str = ""  # the repository whose worktree is its cwd (`new ... worktree`), "" for none
    budget_usd: float | None = None  # `new ... budget=USD`: what it may spend (a ctl's `budget` replaces it)
    token_budget: int | None = None  # `new ... token_budget=N`


@dataclass(slots=True)
class Prompt:
    text: str
    sender: str
    at: str = field(default_factory=timestamp)
    # the session's count of prompts when this one came (1, 2, ...): its row in the store's prompts table;
    # 0 for a prompt never stored (no store)
    seq: int = field(default=0, compare=False)


@dataclass(slots=True)
class Turn:
    """The output of one turn as it streams in; ``changes`` bumps per write."""

    number: int
    prompt: Prompt | None = None  # what started it (None for a turn taken over from an old server without one)
    started: str = field(default_factory=timestamp)
    chunks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for the log only (stderr, diagnostics)
    given: str | None = None  # the answer as the agent handed it in whole (its hook), in place of the chunks
    done: bool = False
    changes: Changes = field(default_factory=Changes)
    spent: Usage | None = None  # what its agent reported it spent (Output.usage), None: nothing reported
    budget_usd_left: float | None = None  # dollars its budgets leave it as it begins (None: no money budget)
    # what its usage counts to besides its session: the beads its session held while it ran, and their
    # convoys (the app level fills them in: spending.py)
    beads: set[str] = field(default_factory=set)
    convoys: set[str] = field(default_factory=set)
    counted: TurnRecord | None = None  # once ended: its record in the usage ledger (saving.py): counted once
    counted_saved: bool = False  # and that record is on disk (a save that failed writes it again)

    def write(self, text: str) -> None:
        if text:
            self.chunks.append(text)
            self.changes.bump()

    def note(self, text: str) -> None:
        if text:
            self.notes.append(text)

    def answer(self, text: str) -> None:
        """The turn's answer, whole: `out` and the log get it, not what streamed (a tmux pane's text)."""
        self.given = text

    def usage(self, usage: Usage) -> None:
        self.spent = usage if self.spent is None else self.spent + usage

    def finish(self) -> None:
        self.done = True
        self.changes.bump()

    def text(self) -> str:
        return self.given if self.given is not None else "".join(self.chunks)


class _TimedChanges(Changes):
    """Changes that remember when the last one was (the manager bumps them for a queued prompt)."""

    __slots__ = ("when",)

    def __init__(self) -> None:
        super().__init__()
        self.when = int(time.time())

    def bump(self) -> None:
        super().bump()
        self.when = int(time.time())


class Session:
    """A session: its definition, state, prompt queue and what it has said."""

    def __init__(self, definition: Definition, backend: Backend, agent: Agent, *,
                 on_change: Callable[[Session], None], on_log: Callable[[Session, str], None]):
        self.definition = definition
        self.backend = backend
        self.agent = agent
        self.state = State.STARTING
        self.detail = ""  # why it is in error / exited, shown after the state word
        self.queue: deque[Prompt] = deque()
        # prompts accepted and on their way to disk: their writes are answered, and they join the queue,
        # once their rows are committed (SessionSaver.commit_prompt)
        self.incoming: list[Prompt] = []
        self.prompt_seq = 0  # the seq of the last prompt accepted
        self.row = 0  # its row in the store's sessions table (0 without a store)
        self.turn: Turn | None = None  # the current or last turn
        self.turn_count = 0
        self.out = ""
        self.transcript: list[str] = []
        self.restarts = 0  # automatic restarts in a row without a good turn
        self.restart_pending = False  # a crash restart is waiting its delay
        self.role_pending = bool(definition.role)  # the role prompt goes before the next first turn
        self.turn_scope = None  # the runner's cancel scope while it drives a turn
        self.driven: Callable[[], bool] = lambda: True  # is a runner (or a restart) there to run the queue?
        # may a turn begin? ("", dollars left or None) or (why not, None): the budgets it is held to (spending.py)
        self.gate: Callable[[], tuple[str, float | None]] = lambda: ("", None)
        self.on_budget_spent: Callable[[str], None] = lambda why: None  # a budget just stopped its queue
        self.changes = _TimedChanges()  # bumps on every state or queue change
        self.last_event = ""  # the last status line reported in `events`, so none is repeated
        # why a budget keeps its queued prompts from running ("" if none does): it is not busy meanwhile
        self.budget_block = ""
        self._on_change = on_change
        self._on_log = on_log
        self._records = (0, int(time.time()))  # transcript records so far, and when the last came
        self._pid_seen = (None, 0, self._records[1])  # the agent's pid at pid_stamp's last look, changes seen, when

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def simulated(self) -> bool:
        return self.backend.simulated

    @property
    def busy(self) -> bool:
        """Starting, running, or a prompt waiting that something will run (SPEC §3 `wait`).

        An ephemeral session that has had its turn is busy until its runner
        has stopped it, so `wait` answers its final state (SPEC §5).
        """
        if self.state in BUSY:
            return True
        if self.definition.ephemeral and self.turn_count and self.state in (State.AWAIT, State.ERROR):
            return self.driven()
        return bool(self.queue or self.incoming) and self.driven() and not self.budget_block

    def status_line(self) -> str:
        """STATE [simulated] [DETAIL...]: the one grammar of `status` and of a session's `events` lines.

        The state word first, then the word `simulated` for a simulated agent,
        then the detail as free text (why it failed, `interrupted` ...), so
        `read state rest` and `case $rest in simulated*)` both work.
        """
        words = [self.state.value]
        if self.simulated:
            words.append("simulated")
        if self.detail:
            words.append(self.detail)
        return " ".join(words)

    def move(self, event: Event, detail: str = "") -> None:
        self.state = advance(self.state, event)
        self.detail = detail
        self.changed()

    def changed(self) -> None:
        self.changes.bump()
        self._on_change(self)

    def record(self, text: str) -> None:
        self.transcript.append(text)
        self._records = (self._records[0] + 1, int(time.time()))
        self._on_log(self, text)

    def stamp(self) -> tuple[int, int]:
        """A version that moves with each state, queue or transcript change, and the epoch second of the last."""
        return self.changes.version + self._records[0], max(self.changes.when, self._records[1])

    def pid_stamp(self) -> tuple[int, int]:
        """`pid`'s stamp: the session's, moved also by each change of the agent's pid seen since the last look.

        Agents set their pid themselves, with no change of the session (a command agent's process
        begins after its turn's record, a tmux agent's before `idle`), so each look compares: a stat
        after a change always finds a new version, and its mtime is when the change was first seen.
        """
        pid = self.agent.pid
        seen, changes, when = self._pid_seen
        if pid != seen:
            changes, when = changes + 1, int(time.time())
            self._pid_seen = (pid, changes, when)
        version, last = self.stamp()
        return version + changes, max(last, when)

    def begin_turn(self, prompt: Prompt) -> Turn:
        turn = self._begin(prompt, "")
        self.record(prompt_header(turn))
        return turn

    def begin_own_turn(self, owner: str, detail: str) -> Turn:
        """A turn an external session's owner began by itself, with no prompt (its own work)."""
        turn = self._begin(None, detail)
        self.record(f"--- begun {turn.number} by {owner} at {turn.started}\n{_ends_line(detail)}")
        return turn

    def _begin(self, prompt: Prompt | None, detail: str) -> Turn:
        advance(self.state, Event.TURN_BEGAN)  # refused before anything changes
        self.turn_count += 1
        turn = self.turn = Turn(self.turn_count, prompt)
        # the move saves the turn with its prompt's row moved to `turn`, in one job: one of them has it
        self.move(Event.TURN_BEGAN, detail)
        return turn

    def end_turn(self, event: Event, detail: str = "") -> None:
        advance(self.state, event)  # refused before anything changes
        turn = self.turn
        if turn is None or turn.done:
            raise IllegalTransition(f"{event.value}: session {self.name} has no turn running")
        turn.finish()
        text = turn.text()
        if event in (Event.TURN_DONE, Event.INTERRUPTED):
            self.out = text
        outcome = {Event.TURN_DONE: "answer", Event.INTERRUPTED: "interrupted"}.get(event, "failed")
        why = f": {detail}" if outcome == "failed" and detail else ""
        notes = "".join(f"--- note\n{_ends_line(n)}" for n in turn.notes)
        # one grammar for every record: --- WHAT TURN at TIME[: why]
        self.record(f"--- {outcome} {turn.number} at {timestamp()}{why}\n{_ends_line(text)}{notes}")
        if event is Event.TURN_DONE:
            self.restarts = 0
        self.move(event, detail)

    def abort_turn(self, reason: str) -> None:
        """End the current turn without an answer, leaving the state to the caller."""
        turn = self.turn
        if turn is not None and not turn.done:
            turn.finish()
            self.record(f"--- ended {turn.number} at {timestamp()}: {reason}\n{_ends_line(turn.text())}")

    def log_text(self) -> str:
        return "".join(self.transcript)

    # ------------------------------------------------------------ the queue

    def arriving(self, prompt: Prompt) -> None:
        """A prompt accepted, on its way to disk (its write is answered, and it joins the queue, once there)."""
        self.incoming.append(prompt)

    def landed(self, prompt: Prompt) -> bool:
        """The prompt is on disk (or was refused): no longer on its way; False if a stop dropped it meanwhile."""
        if not any(p is prompt for p in self.incoming):
            return False
        self.incoming = [p for p in self.incoming if p is not prompt]
        return True

    def enqueue(self, prompt: Prompt) -> None:
        self.queue.append(prompt)
        self.changes.bump()  # the runner and `wait` readers see the queue; the state did not change

    def take(self) -> Prompt:
        """The oldest queued prompt, out of the queue (its turn begins next: begin_turn saves it as the turn's)."""
        return self.queue.popleft()

    def put_back(self, prompt: Prompt) -> None:
        """A taken prompt that never ran: it runs next, not lost."""
        self.queue.appendleft(prompt)

    def drop_queue(self) -> int:
        """Empty the queue and the prompts on their way (a stop, a removal); how many were dropped."""
        dropped = len(self.queue) + len(self.incoming)
        self.queue.clear()
        self.incoming = []
        return dropped

    def restore(self, *, state: State, detail: str, turn_count: int, restarts: int, queue: list[Prompt],
                prompt_seq: int, out: str, role_pending: bool, log: str) -> None:
        """Load what the store saved, before anything runs (restore.py): no transition, the state it had."""
        self.state, self.detail, self.turn_count, self.restarts = state, detail, turn_count, restarts
        self.queue.extend(queue)
        self.prompt_seq, self.out, self.role_pending = prompt_seq, out, role_pending
        self.transcript.append(log)


def prompt_header(turn: Turn) -> str:
    """The transcript's record of a turn's prompt; a restored server checks that it is there."""
    prompt = turn.prompt
    return f"--- prompt {turn.number} from {prompt.sender} at {turn.started}\n{_ends_line(prompt.text)}"


def _ends_line(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
