"""The task that runs one session: start the agent, feed it prompts, watch it.

One runner per agent life. It moves the session through the transition
table and never touches it after its cancel scope was cancelled (stop,
kill or restart already moved the session on while it was waking up).
When the agent ends by itself, the runner reports the exit and asks the
manager for a restart (with backoff). An external session's runner only
starts it: it stays there so that the session counts as driven (a queued
prompt makes `wait` block until its owner takes it and answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from .backend import AgentExited, AgentFailed, NothingToResume, PromptNotSent, TurnFailed
from .session import Prompt, Session
from .states import Event, State


async def run_session(
    session: Session,
    scope: trio.CancelScope,
    *,
    adopted: bool,
    role_text: Callable[[str], str],
    on_exit: Callable[[Session, str], None],
) -> None:
    with scope:
        if not adopted:
            try:
                await session.agent.start()
            except AgentFailed as exc:
                if not scope.cancel_called:
                    session.move(Event.START_FAILED, f"start failed: {exc}")
                    on_exit(session, f"start failed: {exc}")
                return
            if scope.cancel_called:
                return
            session.move(Event.STARTED)
        if session.backend.owner_driven:
            await trio.sleep_forever()  # its owner takes the prompts and ends the turns (owned.py): none run here
        reason = ""
        if adopted and session.state is State.RUNNING:
            try:
                await _follow_adopted_turn(session)
            except AgentExited as exc:
                reason = str(exc)
            if scope.cancel_called:
                return
        if not reason and session.definition.ephemeral and session.turn_count:
            reason = EPHEMERAL_DONE  # adopted after its one turn (or followed it to its end just now)
        reason = reason or await _turns_until_exit(session, role_text)
        if scope.cancel_called:
            return
        if reason is EPHEMERAL_DONE:
            session.move(Event.STOP, "ephemeral: one turn done")
            await session.agent.stop()
            return
        session.abort_turn(f"agent exited ({reason})")
        if session.state is State.RUNNING:
            session.move(Event.TURN_FAILED, reason)
        session.move(Event.EXIT, reason)
        on_exit(session, reason)


EPHEMERAL_DONE = "an ephemeral session did its one turn"


async def _turns_until_exit(session: Session, role_text: Callable[[str], str]) -> str:
    """Run turns until the agent ends by itself (returns why) or an ephemeral turn is done."""
    exit_reason = ""
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            nonlocal exit_reason
            exit_reason = await session.agent.wait_exit()
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        while True:
            # a turn no runner drives (typed into a tmux pane, or adopted mid-turn)
            # must end before the next queued prompt goes in
            while not session.queue or session.state is State.RUNNING or _held_by_budget(session):
                await session.changes.wait_changed(session.changes.version)
            try:
                await _one_turn(session, session.take(), role_text)
            except AgentExited as exc:
                exit_reason = str(exc)
                nursery.cancel_scope.cancel()
                break
            if session.definition.ephemeral:
                exit_reason = EPHEMERAL_DONE
                nursery.cancel_scope.cancel()
                break
    return exit_reason or "the agent ended"


def _held_by_budget(session: Session) -> bool:
    """A prompt waits and the session is not running: does a spent budget keep it from starting? Then the
    session is in `error` saying why (once: a raised budget, and the next change, look again), its queue kept,
    and it is not busy meanwhile (`wait` answers)."""
    why, _ = session.gate()
    if not why:
        session.budget_block = ""
        return False
    first = not session.budget_block
    session.budget_block = why
    if session.state is not State.ERROR or session.detail != why:
        session.move(Event.BUDGET_SPENT, why)
    if first:
        session.on_budget_spent(why)
    return True


async def _one_turn(session: Session, prompt: Prompt, role_text: Callable[[str], str]) -> None:
    """One queued prompt's turn; the role goes before it if it is still to go and the agent begins a conversation.

    The role is still to go until a turn is answered: then the conversation going on has it, from this turn or
    from a first one that carried it and that the agent's program kept (so the agent did not begin anew).
    """
    role = role_text(session.definition.role) if session.role_pending else ""
    agent = session.agent
    _, usd_left = session.gate()
    turn = session.begin_turn(prompt)
    turn.budget_usd_left = usd_left

    async def agent_part() -> None:
        try:
            await agent.turn(_opening(role, agent.begins_conversation) + prompt.text, turn)
        except NothingToResume:  # the resumed conversation was never saved (the log says so): this prompt begins one
            await agent.turn(_opening(role, agent.begins_conversation) + prompt.text, turn)

    if await _drive(session, turn, agent_part):
        session.role_pending = False


def _opening(role: str, begins: bool) -> str:
    """What goes before a prompt: the role, if one is to go and the turn begins a conversation."""
    return role + "\n\n" if role and begins else ""


async def _follow_adopted_turn(session: Session) -> None:
    """The turn the old server left running: follow it to its end (hook or quiet) so the queue moves on."""
    turn = session.turn
    await _drive(session, turn, lambda: session.agent.follow(turn))


async def _drive(session: Session, turn, agent_part: Callable[[], Awaitable[None]]) -> bool:
    """Run the agent's part of a turn where an interrupt can cancel it; end the turn by how it went.

    True if the agent answered.
    """
    with trio.CancelScope() as turn_scope:
        session.turn_scope = turn_scope
        try:
            await agent_part()
        except TurnFailed as exc:
            if isinstance(exc, PromptNotSent) and turn.prompt is not None and session.turn is turn:
                session.put_back(turn.prompt)  # it never ran: it runs next, not lost
            finish_turn(session, turn, Event.TURN_FAILED, str(exc))
            return False
        finally:
            session.turn_scope = None
        finish_turn(session, turn, Event.TURN_DONE)
        return True
    # only an interrupt cancels this scope by itself (a stop cancels the runner)
    finish_turn(session, turn, Event.INTERRUPTED, "interrupted")
    return False


def finish_turn(session: Session, turn, event: Event, detail: str = "") -> None:
    """End the turn, unless stop/kill/restart ended it while the agent's answer was on its way."""
    if session.turn is turn and not turn.done and session.state is State.RUNNING:
        session.end_turn(event, detail)
