"""Who may begin or end a session's turn through its files, and what each word does (SPEC §5), as one table.

A session's turns are driven by its runner (a prompt from the queue), or by
someone outside it writing the session's files:

    OWNER     an external session's owner (backends/external.py), any uname: it
              is the agent. `status`: running | await | error [DETAIL]; `out`:
              the running turn's answer (sessions/owned.py)
    AGENT     a hook-driven (tmux, turn_end = "hook") session's own agent: its
              hook, `anvilfs hook running|await`, attached as uname = the
              session's name. `status`: running | await; `out`: the answer
    STRANGER  anyone else writing a hook-driven session's `status` or `out`
    HOOKLESS  a session whose agent takes no hook words (sim, command, openai,
              tmux with turn_end = "quiet": Agent.hook says False)

A person typing into a tmux agent's terminal shows as its AGENT's `running`
while no turn runs: that begins a turn of the terminal's.

What a word does depends on the session's Phase: its state while no turn
runs; while one runs, whose it is (a runner's, or one no runner drives), and
whether it is LATE: the agent's hook said `running` once (this server's
life), but not yet in the running runner's turn, so an answer or `await` now
is a late one of an earlier turn (a hook runs after its turn and takes time;
the next prompt may be typed meanwhile). The agent runs a turn's hooks in
order, so it must not end this turn. An agent that never says `running` is
not held to it.

TURNS[(writer, word, phase)] is the Outcome; a row with phase None holds for
every phase, one with word None for every word too. BEGIN and END go through
states.py's transition table, which has the last word on the state; ILLEGAL
rows are the ones it refuses (IllegalTransition), written out here so that
the table reads whole.

What the hook's client relies on (client/hook.py, hooks/anvilfs-status;
hookwords.py has the texts they share):

    the answer ended the turn (ANSWER)          exit 0; the kept answer is deleted
    NO_TURN or LATE (Busy, hookwords.NO_TURN)   exit 3 (EXIT_REFUSED): nothing kept in the pane, no await
    the answer not saved (EIO "not saved")      exit 1 (EXIT_KEEP): the word and answer kept for a next server
    any other refusal of the answer             `await` to status instead (the pane's text is the answer)
    a status word taken (BEGIN, END, HEARD,     exit 0
      AGENT_ENDS)
    a status word not saved (EIO "not saved")   exit 1: kept for a next server
    a status word refused (any other error)     exit 3: nothing kept
    no server answered                          exit 1: the script keeps the word in the pane's @anvilfs-hook

The tmux backend takes a word kept in the pane by the RUNNER rows of AGENT,
as if the hook had written it to a server during the turn it follows:
AGENT_ENDS ends that turn (its answer the one the hook kept in tmux, else
the pane's text), HEARD tells that the prompt went in.
"""

from __future__ import annotations

import enum

from ..errors import AnvilError, Busy, InvalidRequest, NotPermitted
from ..hookwords import NO_TURN
from ..journal import one_line
from .session import Prompt
from .states import TRANSITIONS, Event, State, advance


class Writer(enum.StrEnum):
    OWNER = "owner"
    AGENT = "agent"
    STRANGER = "stranger"
    HOOKLESS = "hookless"


class Word(enum.StrEnum):
    RUNNING = "running"
    AWAIT = "await"
    ERROR = "error"  # an owner's only: its turn failed
    ANSWER = "answer"  # the bytes of one open of `out`
    OTHER = "other"  # any other first word written to status

    @classmethod
    def of(cls, text: str) -> Word:
        return cls(text) if text in (cls.RUNNING, cls.AWAIT, cls.ERROR) else cls.OTHER


class Phase(enum.StrEnum):
    STARTING = "starting"
    IDLE = "idle"
    AWAIT = "await"
    ERROR = "error"
    STOPPED = "stopped"
    EXITED = "exited"
    RUNNER = "runner-turn"  # running: a runner's turn in flight (a queued prompt typed in, or an adopted turn)
    LATE = "late-turn"  # running: a runner's turn that has not said running, though the agent's hook did before
    OWN = "own-turn"  # running: a turn no runner drives (an owner's, one taken from next, one typed in)


class Outcome(enum.StrEnum):
    BEGIN = "begin"  # a turn begins: the owner's own (no prompt), or one typed into the agent's terminal
    END = "end"  # the running turn ends: await (its text is the answer) or error (failed)
    REPORT = "report"  # the owner wrote the state the session is in: only the detail changes
    HEARD = "heard"  # the agent hears it; the session does not change (the prompt went in)
    AGENT_ENDS = "agent-ends"  # the agent hears await and ends its runner's turn (the pane's text is the answer)
    ANSWER = "answer"  # the bytes are the running turn's answer, and it ends (await)
    # refusals; the error each raises is in REFUSALS
    ILLEGAL = "illegal"  # the state takes no such turn event (states.py)
    BAD_WORD = "bad-word"
    NOT_ITS_AGENT = "not-its-agent"
    NO_HOOKS = "no-hooks"
    NOT_ANSWERED = "not-answered"  # no answers go to this session's out
    LATE = "late"  # an earlier turn's word or answer
    NO_TURN = "no-turn"  # no turn runs for the answer to be its
    BEGIN_FIRST = "begin-first"  # the owner's answer, with no turn running


W, Wd, P, Out = Writer, Word, Phase, Outcome
NOT_RUNNING = (P.STARTING, P.IDLE, P.AWAIT, P.ERROR, P.STOPPED, P.EXITED)
_EVENTS = {Wd.RUNNING: Event.TURN_BEGAN, Wd.AWAIT: Event.TURN_DONE, Wd.ERROR: Event.TURN_FAILED,
           Wd.ANSWER: Event.TURN_DONE}


def _by_states(word: Word, phase: Phase, allowed: Outcome) -> Outcome:
    """`allowed` where the state (phase) takes the word's turn event, else ILLEGAL."""
    return allowed if (State(phase.value), _EVENTS[word]) in TRANSITIONS else Out.ILLEGAL


TURNS: dict[tuple[Writer, Word | None, Phase | None], Outcome] = {
    # an external session's owner: the word is the state it reports
    **{(W.OWNER, Wd.RUNNING, p): _by_states(Wd.RUNNING, p, Out.BEGIN) for p in NOT_RUNNING},
    (W.OWNER, Wd.RUNNING, P.OWN): Out.REPORT,
    **{(W.OWNER, word, p): Out.REPORT if p.value == word.value else _by_states(word, p, Out.END)
       for word in (Wd.AWAIT, Wd.ERROR) for p in NOT_RUNNING},
    (W.OWNER, Wd.AWAIT, P.OWN): Out.END,
    (W.OWNER, Wd.ERROR, P.OWN): Out.END,
    **{(W.OWNER, Wd.ANSWER, p): Out.BEGIN_FIRST for p in NOT_RUNNING},
    (W.OWNER, Wd.ANSWER, P.OWN): Out.ANSWER,
    (W.OWNER, Wd.OTHER, None): Out.BAD_WORD,
    # a hook-driven session's own agent
    **{(W.AGENT, Wd.RUNNING, p): _by_states(Wd.RUNNING, p, Out.BEGIN) for p in NOT_RUNNING},  # typed in
    (W.AGENT, Wd.RUNNING, P.RUNNER): Out.HEARD,
    (W.AGENT, Wd.RUNNING, P.LATE): Out.HEARD,  # from now on the turn has said it
    (W.AGENT, Wd.RUNNING, P.OWN): Out.ILLEGAL,  # a turn runs already
    **{(W.AGENT, Wd.AWAIT, p): Out.ILLEGAL for p in NOT_RUNNING},
    (W.AGENT, Wd.AWAIT, P.RUNNER): Out.AGENT_ENDS,
    (W.AGENT, Wd.AWAIT, P.LATE): Out.LATE,
    (W.AGENT, Wd.AWAIT, P.OWN): Out.END,
    **{(W.AGENT, Wd.ANSWER, p): Out.NO_TURN for p in NOT_RUNNING},
    (W.AGENT, Wd.ANSWER, P.RUNNER): Out.ANSWER,
    (W.AGENT, Wd.ANSWER, P.LATE): Out.LATE,
    (W.AGENT, Wd.ANSWER, P.OWN): Out.ANSWER,
    (W.AGENT, Wd.ERROR, None): Out.BAD_WORD,
    (W.AGENT, Wd.OTHER, None): Out.BAD_WORD,
    # anyone else, on a hook-driven session: refused whatever the word
    (W.STRANGER, None, None): Out.NOT_ITS_AGENT,
    # a session whose agent takes no hook words
    (W.HOOKLESS, Wd.RUNNING, None): Out.NO_HOOKS,
    (W.HOOKLESS, Wd.AWAIT, None): Out.NO_HOOKS,
    (W.HOOKLESS, Wd.ERROR, None): Out.BAD_WORD,
    (W.HOOKLESS, Wd.OTHER, None): Out.BAD_WORD,
    (W.HOOKLESS, Wd.ANSWER, None): Out.NOT_ANSWERED,
}

REFUSALS: dict[Outcome, type[AnvilError]] = {
    Out.BAD_WORD: InvalidRequest, Out.NOT_ITS_AGENT: NotPermitted, Out.NO_HOOKS: InvalidRequest,
    Out.NOT_ANSWERED: InvalidRequest, Out.LATE: Busy, Out.NO_TURN: Busy, Out.BEGIN_FIRST: Busy,
}
# refused before anything else is looked at (an answer's size, the word's detail)
WHO_REFUSALS = frozenset({Out.NOT_ITS_AGENT, Out.NOT_ANSWERED})


def writer(session, uname: str) -> Writer:
    """Who a write to the session's status or out comes from."""
    if session.backend.owner_driven:
        return W.OWNER
    if not session.backend.hook_driven:
        return W.HOOKLESS
    return W.AGENT if uname == session.name else W.STRANGER


def phase(session, *, late: bool = False) -> Phase:
    """Where the session is, as far as turns go; `late`: the agent's hook said running, not in this turn."""
    if session.state is not State.RUNNING:
        return P(session.state.value)
    if late:
        return P.LATE
    return P.OWN if session.turn_scope is None else P.RUNNER


def decide(who: Writer, word: Word, where: Phase) -> Outcome:
    for key in ((who, word, where), (who, word, None), (who, None, None)):
        if key in TURNS:
            return TURNS[key]
    raise AssertionError(f"turns.py has no row for {who.value} writing {word.value} in {where.value}")


def event(word: Word) -> Event:
    return _EVENTS[word]


def refusal(outcome: Outcome, session, word: Word, text: str = "", uname: str = "") -> AnvilError:
    """The error a refused write gets: what was wrong and how to do it right. `text`: the word as written."""
    name, answer = session.name, word is Wd.ANSWER
    if outcome is Out.ILLEGAL:
        try:
            advance(session.state, _EVENTS[word])
        except AnvilError as exc:
            return exc
        raise AssertionError(f"turns.py: {session.state.value} takes {word.value}, yet its row says illegal")
    message = {
        Out.BAD_WORD: (f"status: write running|await|error [DETAIL...]: {one_line(text)!r} is not one of the words"
                     if session.backend.owner_driven else
                     f"status: write 'running' or 'await' (an agent's hook does): {text!r} is invalid"),
        Out.NOT_ITS_AGENT: (f"out: only {name}'s own agent hands in its answer (its hook's `anvilfs hook await`, as "
                          f"uname {name}); {uname or 'this writer'} is not it" if answer else
                          f"status: only {name}'s own agent reports its turns (its hook's `anvilfs hook "
                          f"running|await`, as uname {name}); {uname or 'this writer'} is not it"),
        Out.NO_HOOKS: (f"status: only hook-driven (tmux) agents and external owners write it; {name} is on "
                     f"{session.backend.kind} backend {session.backend.name}, which reports its own turns"),
        Out.NOT_ANSWERED: (f"out: only an external session's owner or a hook-driven agent writes it; {name} is on "
                         f"{session.backend.kind} backend {session.backend.name}"),
        Out.LATE: (f"{'out: ' + NO_TURN if answer else 'status await: end a turn once its hook said running'}: turn "
                 f"{session.turn.number if session.turn else '?'} of {name} has not said running yet, so this "
                 f"{'answer' if answer else 'await'} is an earlier turn's"),
        Out.NO_TURN: f"out: {NO_TURN}: {name} is {session.status_line()}, so this one would be no turn's",
        Out.BEGIN_FIRST: (f"out: begin a turn first (write 'running' to status, or read next): out takes the answer "
                        f"of the running turn, and {name} is {session.status_line()}"),
    }[outcome]
    return REFUSALS[outcome](message)


def hear_hook(session, word: str) -> None:
    """An agent's hook wrote running/await to its status: the AGENT rows say what it does (Sessions.hook saves
    it after)."""
    said = Word.of(word)
    outcome = decide(Writer.AGENT, said, phase(session))
    if outcome is Outcome.BAD_WORD:
        raise refusal(outcome, session, said, word)
    if not session.agent.hook(word):  # the agent hears it first, and says whether it takes hook words
        raise refusal(decide(Writer.HOOKLESS, said, phase(session)), session, said, word)
    if outcome is Outcome.BEGIN:  # a person typed into the agent directly
        session.begin_turn(Prompt("(typed into the agent's terminal)", "terminal"))
    elif outcome is Outcome.END:
        session.end_turn(event(said))
    elif outcome not in (Outcome.HEARD, Outcome.AGENT_ENDS):  # the runner's turn ends when the agent sees await
        raise refusal(outcome, session, said, word)
