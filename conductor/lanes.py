"""The `each` step: its body once per session, all the lanes at once, each going its own way.

    At(rounds, lane)        where the walk is: the rounds of the repeats around a step, and the lane's
                            session inside an each (None outside); it makes the step's key and marker
    run_lanes(engine, step, at)   the lanes in one nursery; the each is done when all are

A lane is the body walked with `{session}` standing for its session, its own
rounds in its repeats and its own outcomes: `break` leaves the lane's
innermost repeat, `next` at the body's end and `finish` end the lane
(done), and `fail` (or a StepFailed) ends the workflow failed, cancelling
the other lanes: their actions under way (a prompt, a bead, a mail and its
record) are shielded and finish, their waits and gates are cut short. A
halt (stop, interrupt) reaches each lane as it does a walk without lanes.

Keys: a step in a lane is `ID[LANE]` or `ID[LANE]@ROUNDS` (`ask[dev2]@3`),
unique since an each holds no each and a lane's session is there once;
steps outside lanes keep `ID` and `ID@ROUNDS`. Markers name the lane
(markers.py), so two lanes' prompts to one shared session differ.

Progress: the lanes are counted in memory (waiting: in a wait or a gate;
done) and a task of the each shows the counts in the conductor's status at
most once a second (`step=work lanes=100 waiting=37 done=60`): a lane's
own steps send no status write, so nothing stands between a lane's `wait`
answering and its next prompt but the record of that prompt.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import trio

from .access import StepFailed
from .control import Halted
from .model import LANE, EachStep
from .sessions import expand

if TYPE_CHECKING:
    from .engine import Engine

PROGRESS_EVERY = 1.0  # seconds between two shows of the lanes' counts (one status write each at most)


@dataclass(frozen=True, slots=True)
class Flow:
    kind: str  # next | break | finish | fail | halt
    why: str = ""


NEXT = Flow("next")


class Board:
    """How the lanes of one each stand: plain counters, read by the task that shows them."""

    def __init__(self, lanes: int):
        self.lanes, self.waiting, self.done = lanes, 0, 0

    def detail(self) -> str:
        return f"lanes={self.lanes} waiting={self.waiting} done={self.done}"

    @contextlib.contextmanager
    def looking(self) -> Iterator[None]:
        self.waiting += 1
        try:
            yield
        finally:
            self.waiting -= 1


@dataclass(frozen=True, slots=True)
class At:
    rounds: tuple[int, ...] = ()
    lane: str | None = None
    board: Board | None = field(default=None, compare=False)

    def key(self, step_id: str) -> str:
        return self.local(step_id) + (f"@{self.dotted}" if self.rounds else "")

    def local(self, step_id: str) -> str:
        return f"{step_id}[{self.lane}]" if self.lane else step_id

    @property
    def dotted(self) -> str:
        return ".".join(map(str, self.rounds))

    def round(self, number: int) -> At:
        return replace(self, rounds=self.rounds + (number,))

    def name(self, name: str) -> str:
        return self.lane if name == LANE and self.lane else name

    def names(self, names: list[str]) -> list[str]:
        return [self.name(n) for n in names]

    def looking(self) -> contextlib.AbstractContextManager[None]:
        return self.board.looking() if self.board else contextlib.nullcontext()


async def run_lanes(engine: Engine, step: EachStep, at: At) -> Flow:
    lanes = expand(engine.workflow, step.sessions)
    board, failed, halted = Board(len(lanes)), [], []
    engine.access.say(f"{at.key(step.id)}: each: {len(lanes)} lanes")
    async with trio.open_nursery() as shower:
        shower.start_soon(_show, engine, board, step.id, at.rounds)
        async with trio.open_nursery() as nursery:
            for lane in lanes:
                lane_at = At(at.rounds, lane, board)
                nursery.start_soon(_lane, engine, step, lane_at, failed, halted, nursery.cancel_scope)
        shower.cancel_scope.cancel()
    engine.reporter.update(step.id, at.rounds, board.detail())  # the end, not a count of a second ago
    if failed:
        return failed[0]
    if halted:
        raise halted[0]
    return NEXT


async def _lane(engine: Engine, step: EachStep, at: At, failed: list[Flow], halted: list[Halted],
                others: trio.CancelScope) -> None:
    try:
        flow = await engine.steps(step.steps, at)
    except StepFailed as exc:
        flow = Flow("fail", f"lane {at.lane}: {exc}")
    except Halted as exc:
        halted.append(exc)
        return
    at.board.done += 1
    if flow.kind == "fail":
        failed.append(flow)
        others.cancel()


async def _show(engine: Engine, board: Board, step_id: str, rounds: tuple[int, ...]) -> None:
    shown = None
    while True:
        if (detail := board.detail()) != shown:
            engine.reporter.update(step_id, rounds, detail)
            shown = detail
        await trio.sleep(PROGRESS_EVERY)  # a rate, not a synchronisation: the counts change without telling
