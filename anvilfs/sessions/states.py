"""Session states and every allowed transition (SPEC §5), as one table.

Everything that moves a session from one state to another goes through
``advance``; a (state, event) pair that is not in the table raises
IllegalTransition, which is a bug when the server caused it and a bad
request when an agent's hook wrote it to `status`.
"""

from __future__ import annotations

import enum

from ..errors import InvalidRequest


class State(enum.StrEnum):
    STARTING = "starting"
    IDLE = "idle"
    RUNNING = "running"
    AWAIT = "await"
    STOPPED = "stopped"
    EXITED = "exited"
    ERROR = "error"


class Event(enum.StrEnum):
    STARTED = "started"  # the agent is ready for prompts
    START_FAILED = "start-failed"
    TURN_BEGAN = "turn-began"  # a prompt went in (or a hook wrote running)
    TURN_DONE = "turn-done"  # the answer is in out (or a hook wrote await)
    TURN_FAILED = "turn-failed"
    INTERRUPTED = "interrupted"  # a person cancelled the turn; partial answer in out
    CLEAR = "clear"  # fresh conversation
    STOP = "stop"  # stop or kill
    EXIT = "exit"  # the agent process ended by itself
    RESTART = "restart"
    REPORT = "report"  # an external session's owner wrote the state it is in again, with new detail
    BUDGET_SPENT = "budget-spent"  # a prompt waits, and a budget the session is held to is spent (usage/)


class IllegalTransition(InvalidRequest):
    """A (state, event) pair the table does not allow."""


S, E = State, Event
_ALIVE = (S.STARTING, S.IDLE, S.RUNNING, S.AWAIT, S.ERROR)

TRANSITIONS: dict[tuple[State, Event], State] = {
    (S.STARTING, E.STARTED): S.IDLE,
    (S.STARTING, E.START_FAILED): S.ERROR,
    (S.IDLE, E.TURN_BEGAN): S.RUNNING,
    (S.AWAIT, E.TURN_BEGAN): S.RUNNING,
    (S.ERROR, E.TURN_BEGAN): S.RUNNING,  # a failed turn leaves the agent usable
    (S.RUNNING, E.TURN_DONE): S.AWAIT,
    (S.RUNNING, E.TURN_FAILED): S.ERROR,
    (S.RUNNING, E.INTERRUPTED): S.AWAIT,
    (S.IDLE, E.CLEAR): S.IDLE,
    (S.AWAIT, E.CLEAR): S.IDLE,
    (S.ERROR, E.CLEAR): S.IDLE,
    # an external session's owner reports progress: the state stays, its detail changes
    (S.RUNNING, E.REPORT): S.RUNNING,
    (S.AWAIT, E.REPORT): S.AWAIT,
    (S.ERROR, E.REPORT): S.ERROR,
    # a queued prompt does not start: the session stays usable, its queue kept, for a raised budget
    (S.IDLE, E.BUDGET_SPENT): S.ERROR,
    (S.AWAIT, E.BUDGET_SPENT): S.ERROR,
    (S.ERROR, E.BUDGET_SPENT): S.ERROR,
    **{(state, E.STOP): S.STOPPED for state in _ALIVE},
    (S.EXITED, E.STOP): S.STOPPED,  # also cancels a restart on its way
    **{(state, E.EXIT): S.EXITED for state in _ALIVE},
    (S.STOPPED, E.RESTART): S.STARTING,
    (S.EXITED, E.RESTART): S.STARTING,
    (S.ERROR, E.RESTART): S.STARTING,
}

# A session is busy (a `wait` read blocks) in these states, or while a prompt is queued.
BUSY = frozenset({S.STARTING, S.RUNNING})
# A prompt may be queued for a session in these states; it runs when the agent is ready.
ACCEPTS_PROMPTS = frozenset({S.STARTING, S.IDLE, S.RUNNING, S.AWAIT, S.ERROR})


def advance(state: State, event: Event) -> State:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        allowed = sorted(e.value for (s, e) in TRANSITIONS if s is state)
        raise IllegalTransition(
            f"a session that is {state.value} cannot take {event.value}; "
            f"from {state.value} it can take: {', '.join(allowed) or 'nothing'}"
        ) from None
