"""What agents spend, tied to the work: the beads and convoys a turn counts to, and the budgets that hold.

    a turn begins       it counts to the beads its session holds, and to their convoys
    a claim mid-turn    the bead (and its convoy) joins the running turn's: a bot that claims, works and
                        completes in one turn spends that turn on the bead
    a prompt waits      gate(): the session's budget (its `new ... budget=`, or a ctl's `budget USD`) and
                        those of the convoys of the beads it holds; one spent keeps the prompt waiting,
                        the session in `error` saying why (sessions/runner.py), and human gets a
                        BUDGET_SPENT mail
    a budget raised     the sessions it held are looked at again: their queues run

The sums are the usage ledger's (usage/ledger.py, kept by the sessions'
saver as turns end); the budgets set after the fact are its table's
(usage/budgets.py). docs/usage.md says it for users.
"""

from __future__ import annotations

from .beads import Bead, Board, Status
from .beads.view import Replaced
from .domain_events import BeadChanged, BudgetSpent, EventBus, SessionMoved
from .journal import timestamp
from .mail import Draft, MessageType, PostOffice
from .mail.message import Message
from .sessions import Session, Sessions, State
from .usage.budgets import NONE, Budget, BudgetTable


class Spending:
    def __init__(self, sessions: Sessions, board: Board, post: PostOffice, bus: EventBus, db=None):
        self.sessions, self.board, self.post = sessions, board, post
        self.ledger = sessions.ledger
        self.budgets = BudgetTable(db)
        self._holders: dict[str, dict[str, Bead]] = {}  # session -> the beads it holds, by id
        self._replaced = Replaced(board.by_id(), board.replacements)  # what the board changed since the last look
        sessions.turn_gate = self.gate
        bus.subscribe(SessionMoved, self._moved)
        bus.subscribe(BeadChanged, self._bead_changed)
        bus.subscribe(BudgetSpent, self._spent)

    # ------------------------------------------------------------ what a turn counts to

    def _moved(self, event: SessionMoved) -> None:
        if event.state != State.RUNNING.value:
            return
        session = self.sessions.find(event.session)
        turn = session.turn if session is not None else None
        if turn is None or turn.done or turn.counted is not None:
            return
        for bead in self._held(event.session):
            _counts_to(turn, bead)

    def _bead_changed(self, event: BeadChanged) -> None:
        for session in self.sessions.all():
            if session.budget_block:  # a convoy's budget held it: does it still hold the bead?
                self._look_again(session)
        if event.verb != "claim":
            return
        bead = self.board.find(event.bead)
        session = self.sessions.find(bead.assigned_to) if bead is not None and bead.assigned_to else None
        turn = session.turn if session is not None else None
        if turn is not None and not turn.done and session.state is State.RUNNING:
            _counts_to(turn, bead)

    def _held(self, name: str) -> list[Bead]:
        """The beads `name` holds, kept from the board's changes: a turn began after each change of the board
        walked all 10,000 beads (1-2 ms of the loop a prompt, issue 32); now only the beads replaced since."""
        changes = self._replaced.look()
        if changes is None:  # a bead removed: every bead again
            self._holders = {}
            changes = [(None, bead) for bead in self.board.all()]
        holders = self._holders
        for old, new in changes:
            if old is not None and old.assigned_to in holders:
                held = holders[old.assigned_to]
                held.pop(old.id, None)
                if not held:
                    del holders[old.assigned_to]
            if new.assigned_to and new.status is Status.IN_PROGRESS:
                holders.setdefault(new.assigned_to, {})[new.id] = new
        return list(holders.get(name, {}).values())

    # ------------------------------------------------------------ budgets

    def session_budget(self, session: Session) -> Budget:
        """Its own: a ctl's `budget`/`token_budget` if one was written, else what `new` gave."""
        d = session.definition
        return self.budgets.get("session", str(session.row)) or Budget(d.budget_usd, d.token_budget)

    def convoy_budget(self, convoy: str) -> Budget:
        return self.budgets.get("convoy", convoy) or NONE

    def gate(self, session: Session) -> tuple[str, float | None]:
        """("", dollars left or None) if a turn of `session` may begin; (why not, None) if a budget is spent."""
        held = [(self.session_budget(session), self.ledger.session(session.row)[0], f"session {session.name}",
                 f"agent/{session.name}/ctl")]
        convoys = {b.convoy for b in self._held(session.name) if b.convoy} if self.budgets.convoys else ()
        for convoy in sorted(convoys):
            budget = self.convoy_budget(convoy)
            if budget != NONE:
                held.append((budget, self.ledger.convoy(convoy), f"convoy {convoy} (whose bead it holds)",
                             f"agent/convoys/{convoy}/ctl"))
        left = None
        for budget, usage, whose, ctl in held:
            if why := budget.spent(usage, whose, ctl):
                return why, None
            if (usd := budget.usd_left(usage)) is not None:
                left = usd if left is None else min(left, usd)
        return "", left

    def set_session_budget(self, name: str, usd: float | None = None, tokens: int | None = None) -> None:
        """A session's ctl `budget USD` / `token_budget N`: set (raised or lowered), and its queue looked at."""
        session = self.sessions.get(name)
        self.budgets.set("session", str(session.row), self.session_budget(session).updated(usd, tokens))
        self._look_again(session)

    def set_convoy_budget(self, convoy: str, usd: float | None = None, tokens: int | None = None) -> None:
        self.budgets.set("convoy", convoy, self.convoy_budget(convoy).updated(usd, tokens))
        for session in self.sessions.all():
            if session.budget_block:
                self._look_again(session)

    def _look_again(self, session: Session) -> None:
        """A budget that held `session` may not any more: if none does, it is busy again at once (its queue
        will run: a `wait` read right after the write that raised it waits for that), and its runner looks."""
        if session.budget_block and not self.gate(session)[0]:
            session.budget_block = ""
        session.changes.bump()

    def _spent(self, event: BudgetSpent) -> None:
        body = (f"{event.why}.\n\nSession {event.session} has prompts waiting; they run once the budget is raised "
                f"(its queue is kept: agent/{event.session}/queue). What it spent: agent/{event.session}/usage.\n")
        draft = Draft(to="human", type=MessageType.BUDGET_SPENT, subject=f"budget spent: {event.session}", body=body)
        self.post.deliver(Message.of(draft, id=self.post.ids.next(), sender="anvilfs", timestamp=timestamp()))


def _counts_to(turn, bead) -> None:
    """The turn's usage counts to `bead` and, once, to its convoy."""
    turn.beads.add(bead.id)
    if bead.convoy:
        turn.convoys.add(bead.convoy)
