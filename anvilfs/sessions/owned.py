"""What the owner of an external session does through its files (SPEC §5).

An external session (backends/external.py) runs no agent: its owner, a
conductor or any program outside anvilfs, is the agent. It

    reports   `status`: running | await | error, then free detail
              (`running workflow=review step=fix round=2`). The word moves
              the session through the transition table: `running` begins
              a turn of its own (no prompt), `await` ends the turn with no
              answer, `error` ends it failed. The word of the state the
              session is in already changes only the detail (a report).
    takes     `next`: the oldest queued prompt, which begins its turn; while
              that turn runs, `next` gives the same prompt again, so an
              owner that died after reading it finds it (it is also the
              turn's prompt in the log, like any backend's).
    answers   `out`: the bytes of one open are the running turn's answer;
              the turn ends (`await`) with them in `out` and the log.

Everything else (stop, kill, interrupt, restart, clear, remove, wait) is the
same as for any session; the owner learns of it from `status` or `events`.

A hook-driven agent (tmux, turn_end = "hook") answers through `out` too: its
hook (`anvilfs hook await`, anvilfs/client/hook.py) writes the turn's answer
as the session itself (uname = its name, from ANVILFS_SESSION). The answer
takes the place of the pane's text, which was only the turn's `stream`, and
ends the turn as the hook's `await` would; only the agent may, and only while
a turn runs. Its `status` too is the agent's alone: its hook writes `running`
when a turn begins, `await` when one ends with no answer to give.

Who may write which word, and what it does in each phase of the session
(which turn a hook's answer or `await` belongs to included), is turns.py's
table; this module looks it up and acts on the outcome. What it keeps is
what that table's LATE phase needs: the turn in which each hook-driven
agent's hook last said `running`. That lives as long as the server: a
restarted server takes the answer of the turn it adopted, whose `running`
the old server heard, and is held again from the next `running`.

Each of these writes is answered once what it changed is on disk; when the
disk refuses, the change stays made in memory (the save is retried) and the
write fails with EIO, so a hook keeps its answer for a next server.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ..errors import Busy, InvalidRequest, LimitExceeded
from ..hookwords import AWAIT
from ..journal import has_line_breakers, one_line
from . import turns
from .session import Prompt, Session, Turn
from .states import Event, IllegalTransition, State
from .turns import Outcome, Word, Writer

MAX_DETAIL = 200  # characters: the detail shows in `status` and `events` lines


def check_detail(detail: str) -> None:
    if len(detail) > MAX_DETAIL:
        raise LimitExceeded(f"status: keep the detail to at most {MAX_DETAIL} characters (it shows in status and "
                            f"events lines): it has {len(detail)}")
    if has_line_breakers(detail) or any(ch < " " or ch == "\x7f" for ch in detail):
        raise InvalidRequest(f"status: leave control characters out of the detail (status and events show it on "
                             f"one line): {one_line(detail)!r} has one")
    if detail.split(" ", 1)[0] == "simulated":
        raise InvalidRequest("status: begin the detail with another word than 'simulated': the status line keeps "
                             "that word for simulated agents")


class Owners:
    """The owner's side of the external sessions of one Sessions, and the hooks' side of the hook-driven ones.

    It is given what it needs of the manager: `get` (a session by name, or NotFound), `hook` (a hook's
    word on a session, Sessions.hook) and `max_answer` (the most bytes an answer may have)."""

    def __init__(self, get: Callable[[str], Session], hook: Callable[[str, str], None],
                 max_answer: Callable[[], int]):
        self._get, self._hook, self._max_answer = get, hook, max_answer
        # hook-driven sessions whose hook said `running`: the turn it last said it in (this server's life)
        self._said_running: weakref.WeakKeyDictionary[Session, Turn | None] = weakref.WeakKeyDictionary()

    def _owned(self, name: str) -> Session:
        session = self._get(name)
        if not session.backend.owner_driven:
            raise InvalidRequest(f"{name} is on {session.backend.kind} backend {session.backend.name}, which runs "
                                 "its own turns: only an external session's owner reports them")
        return session

    def report(self, name: str, line: str, owner: str) -> None:
        """The owner wrote a line to `status`: WORD [DETAIL...] (its rows in turns.py)."""
        session = self._owned(name)
        text, _, detail = line.strip().partition(" ")
        detail = detail.strip()
        word = Word.of(text)
        outcome = turns.decide(Writer.OWNER, word, self.phase(session))
        if outcome is Outcome.BAD_WORD:
            raise turns.refusal(outcome, session, word, text)
        check_detail(detail)
        try:
            if outcome is Outcome.REPORT:
                session.move(Event.REPORT, detail)
            elif outcome is Outcome.BEGIN:
                session.begin_own_turn(owner, detail)
            elif outcome is Outcome.END:
                session.end_turn(turns.event(word), detail)
            else:
                raise turns.refusal(outcome, session, word, text)
        except IllegalTransition as exc:
            raise IllegalTransition(f"status {text}: {exc}") from None

    def hook(self, name: str, line: str, writer: str) -> None:
        """An agent's hook wrote `running` or `await` to status: on a hook-driven session, as the session."""
        session = self._get(name)
        text = line.split(" ", 1)[0]
        if not session.backend.hook_driven:
            self._hook(name, text)  # refused there, with why
            return
        word = Word.of(text)
        outcome = turns.decide(turns.writer(session, writer), word, self.phase(session))
        if outcome in (Outcome.NOT_ITS_AGENT, Outcome.LATE):
            raise turns.refusal(outcome, session, word, text, writer)
        try:
            self._hook(name, text)
        finally:  # a `running` the disk did not take was heard all the same
            if word is Word.RUNNING and session.state is State.RUNNING:
                self._said_running[session] = session.turn

    def phase(self, session: Session) -> turns.Phase:
        """The session's phase; LATE if the agent's hook said `running` once, but not yet in the running turn
        (see turns.py)."""
        late = (session in self._said_running and session.state is State.RUNNING
                and self._said_running[session] is not session.turn)
        return turns.phase(session, late=late)

    def take(self, name: str) -> Prompt | None:
        """`next`: the prompt of the running turn if it came from `in`, else the oldest queued one, which
        begins its turn (saved, with the prompt as the turn's, before the read is answered); None if neither."""
        session = self._owned(name)
        if session.state is State.RUNNING:
            turn = session.turn
            return turn.prompt if turn is not None and not turn.done else None
        if not session.queue or session.state not in (State.IDLE, State.AWAIT, State.ERROR):
            return None
        prompt = session.take()
        session.begin_turn(prompt)  # saves the turn with its prompt, then logs the prompt
        return prompt

    def can_take(self, session: Session) -> bool:
        """A read of `next` would answer now: a prompt to give, or the session has ended (end of file)."""
        if session.state in (State.STOPPED, State.EXITED):
            return True
        if session.state is State.RUNNING:
            return session.turn is not None and not session.turn.done and session.turn.prompt is not None
        return bool(session.queue) and session.state is not State.STARTING

    def check_answer(self, name: str, size: int, writer: str = "") -> None:
        """What a write to `out` can be refused for early: the wrong writer, too large, or no turn running."""
        self._answer_outcome(self._get(name), size, writer)

    def _answer_outcome(self, session: Session, size: int, writer: str) -> Outcome | None:
        if not size:
            return None  # opening out to read it is never refused
        outcome = turns.decide(turns.writer(session, writer), Word.ANSWER, self.phase(session))
        if outcome in turns.WHO_REFUSALS:
            raise turns.refusal(outcome, session, Word.ANSWER, uname=writer)
        limit = self._max_answer()
        if size > limit:
            raise LimitExceeded(f"send at most {limit} bytes: the answer for {session.name} is too long ({size} bytes)")
        if outcome is not Outcome.ANSWER:
            raise turns.refusal(outcome, session, Word.ANSWER, uname=writer)
        return outcome

    def answer(self, name: str, text: str, turn: Turn | None = None, writer: str = "") -> None:
        """The bytes of one open of `out`: the answer of the turn running when they began (`turn`, if
        given), which ends (await) with it; refused if that turn is over, even if another runs now."""
        session = self._get(name)
        self._answer_outcome(session, len(text.encode()), writer)
        if turn is not None and (session.turn is not turn or turn.done):
            raise Busy(f"out: this answer was begun in turn {turn.number}, which has ended; write the answer of "
                       f"turn {session.turn.number if session.turn else '?'} on a new open of out")
        if session.backend.owner_driven:
            session.turn.write(text)
        else:
            session.turn.answer(text)  # in place of the pane's text, which was the turn's stream
            session.agent.hook(AWAIT)  # a runner's turn stops following the pane; saved() notes the await
        # saved with the turn's end; the write fails with EIO if not, and the hook keeps the answer for a next server
        session.end_turn(turns.event(Word.ANSWER))
