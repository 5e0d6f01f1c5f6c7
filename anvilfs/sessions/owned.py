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

Which turn a hook's answer (or `await`) ends: the running one, but only once
that turn's hook said `running`, if the agent's hook ever said it. A hook
runs after its turn, and takes time (a process, a connection): the answer of
a turn interrupted meanwhile can come after the next prompt was typed, and
must not end that turn with the earlier one's text. The agent runs a turn's
hooks in order (Claude Code: UserPromptSubmit, Stop, each waited for) and
the next turn's after them, so an answer that comes before the running
turn's `running` is an earlier turn's: refused (EBUSY), and the hook keeps
nothing. An agent that never says `running` (only a Stop hook installed) is
not held to it. What was heard lives as long as the server: a restarted
server takes the answer of the turn it adopted, whose `running` the old
server heard, and is held again from the next `running`.

Each of these writes is answered once what it changed is on disk; when the
disk refuses, the change stays made in memory (the save is retried) and the
write fails with EIO, so a hook keeps its answer for a next server.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ..errors import Busy, InvalidRequest, LimitExceeded, NotPermitted
from ..journal import has_line_breakers, one_line
from .session import Prompt, Session, Turn
from .states import Event, IllegalTransition, State

MAX_DETAIL = 200  # characters: the detail shows in `status` and `events` lines
_WORDS = {"running": Event.TURN_BEGAN, "await": Event.TURN_DONE, "error": Event.TURN_FAILED}
_STATUS_USAGE = "running|await|error [DETAIL...]"


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
        """The owner wrote a line to `status`: WORD [DETAIL...]."""
        session = self._owned(name)
        word, _, detail = line.strip().partition(" ")
        detail = detail.strip()
        event = _WORDS.get(word)
        if event is None:
            raise InvalidRequest(f"status: write {_STATUS_USAGE}: {one_line(word)!r} is not one of the words")
        check_detail(detail)
        try:
            if session.state.value == word:
                session.move(Event.REPORT, detail)
            elif event is Event.TURN_BEGAN:
                session.begin_own_turn(owner, detail)
            else:
                session.end_turn(event, detail)
        except IllegalTransition as exc:
            raise IllegalTransition(f"status {word}: {exc}") from None

    def hook(self, name: str, line: str, writer: str) -> None:
        """An agent's hook wrote `running` or `await` to status: on a hook-driven session, as the session."""
        session = self._get(name)
        word = line.split(" ", 1)[0]
        if not session.backend.hook_driven:
            self._hook(name, word)  # refused there, with why
            return
        self._check_agent(session, writer, "status", "reports its turns", "running|await")
        if word == "await":
            self._check_said_running(session, "status await: end a turn once its hook said running", "await")
        try:
            self._hook(name, word)
        finally:  # a `running` the disk did not take was heard all the same
            if word == "running" and session.state is State.RUNNING:
                self._said_running[session] = session.turn

    def _check_said_running(self, session: Session, refusal: str, what: str) -> None:
        """Busy if the agent's hook said `running` once, but not yet in the running turn: `what` is a late
        one of an earlier turn (see the module's docstring)."""
        if session not in self._said_running or session.state is not State.RUNNING:
            return
        if self._said_running[session] is not session.turn:
            raise Busy(f"{refusal}: turn {session.turn.number} of {session.name} has not said running yet, so this "
                       f"{what} is an earlier turn's")

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
        """What a write to `out` can be refused for early: too large, the wrong writer, or no turn running."""
        session = self._get(name)
        if not size:
            return  # opening out to read it is never refused
        if not session.backend.owner_driven:
            self._check_answerer(session, writer)
        limit = self._max_answer()
        if size > limit:
            raise LimitExceeded(f"send at most {limit} bytes: the answer for {name} is too long ({size} bytes)")
        if session.state is State.RUNNING:
            if session.backend.hook_driven:
                self._check_said_running(session, "out: hand in an answer while its turn runs", "answer")
            return
        if session.backend.owner_driven:
            raise Busy(f"out: begin a turn first (write 'running' to status, or read next): out takes the answer "
                       f"of the running turn, and {name} is {session.status_line()}")
        raise Busy(f"out: hand in an answer while its turn runs: {name} is {session.status_line()}, so this one "
                   "would be no turn's")

    def _check_answerer(self, session: Session, writer: str) -> None:
        if not session.backend.hook_driven:
            raise InvalidRequest(f"out: only an external session's owner or a hook-driven agent writes it; "
                                 f"{session.name} is on {session.backend.kind} backend {session.backend.name}")
        self._check_agent(session, writer, "out", "hands in its answer", "await")

    @staticmethod
    def _check_agent(session: Session, writer: str, file: str, does: str, words: str) -> None:
        """NotPermitted unless the writer is the session's own agent: its hook attaches as uname NAME."""
        if writer != session.name:
            raise NotPermitted(f"{file}: only {session.name}'s own agent {does} (its hook's `anvilfs hook {words}`, "
                               f"as uname {session.name}); {writer or 'this writer'} is not it")

    def answer(self, name: str, text: str, turn: Turn | None = None, writer: str = "") -> None:
        """The bytes of one open of `out`: the answer of the turn running when they began (`turn`, if
        given), which ends (await) with it; refused if that turn is over, even if another runs now."""
        self.check_answer(name, len(text.encode()), writer)
        session = self._get(name)
        if turn is not None and (session.turn is not turn or turn.done):
            raise Busy(f"out: this answer was begun in turn {turn.number}, which has ended; write the answer of "
                       f"turn {session.turn.number if session.turn else '?'} on a new open of out")
        if session.backend.owner_driven:
            session.turn.write(text)
        else:
            session.turn.answer(text)  # in place of the pane's text, which was the turn's stream
            session.agent.hook("await")  # a runner's turn stops following the pane; saved() notes the await
        # saved with the turn's end; the write fails with EIO if not, and the hook keeps the answer for a next server
        session.end_turn(Event.TURN_DONE)
