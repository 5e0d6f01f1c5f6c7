"""The simulated backend: a deterministic fake agent for demos and tests.

It never pretends to be a model. Every answer starts with "[simulated]", and
the session's status line, `list` and `events` mark it `simulated`.

A prompt may ask for behaviour a test needs:
  sim:fail  the turn fails (session goes to error)
  sim:hang  the turn never ends until the session is stopped
  sim:exit  the agent "process" ends (session goes to exited)
  sim:issues=N  the session's first N turns report a (simulated) problem on a line starting
            `ISSUE:`, later ones say `NO ISSUES`: a review loop (conductor/examples/review.toml)
            goes round N times, then ends
  sim:write PATH TEXT  (a line of its own) writes TEXT and a newline to PATH, relative to the
            session's cwd and inside it (parents made, the file replaced); several such lines write
            several files, in order. A path that is absolute, has a `..` or leads out of cwd through a
            symbolic link fails the turn, and then nothing is written
  sim:usage=IN,OUT[,USD]  the turn reports that it spent IN input and OUT output tokens (and USD
            dollars; without it, no cost): simulated figures, for budgets' demos and tests (docs/usage.md)
"""

from __future__ import annotations

import itertools
import re

import trio

from ..sessions.backend import Agent, AgentExited, Backend, Output, SessionInfo, TurnFailed
from ..usage import Usage
from . import sim_write


_ISSUES = re.compile(r"\bsim:issues=(\d+)")
_USAGE = re.compile(r"\bsim:usage=(\d{1,12}),(\d{1,12})(?:,(\d{1,6}(?:\.\d{1,9})?))?")


class SimBackend(Backend):
    kind = "sim"
    per_turn = True
    simulated = True

    def __init__(self, name: str = "sim", *, step_delay: float = 0.02):
        super().__init__(name)
        self.step_delay = step_delay

    def availability(self) -> str:
        return "ready"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        return SimAgent(session, self.step_delay)


class SimAgent(Agent):
    simulated = True

    def __init__(self, session: SessionInfo, step_delay: float):
        self.session = session
        self.step_delay = step_delay
        self.turns = itertools.count(1)

    async def start(self) -> None:
        await trio.sleep(self.step_delay)

    async def turn(self, prompt: str, output: Output) -> None:
        number = next(self.turns)
        if "sim:hang" in prompt:
            output.write(f"[simulated] {self.session.name}, turn {number}: hanging until interrupted\n")
            await trio.sleep_forever()
        if "sim:exit" in prompt:
            raise AgentExited("the simulated agent exited because the prompt said sim:exit")
        if "sim:fail" in prompt:
            raise TurnFailed("simulated failure: the prompt said sim:fail")
        writes = sim_write.planned(prompt, self.session.cwd)  # all checked before any is written
        # fsyncs off the event loop; not for prompts without writes (a thread's real time would let
        # an autojump clock's deadlines fire in the domain tests)
        written = await trio.to_thread.run_sync(sim_write.write_all, writes) if writes else []
        first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
        pieces = [
            f"[simulated] {self.session.name}, turn {number}: ",
            "this answer comes from anvilfs's simulated agent, not from a model.\n",
            f"You wrote {len(prompt.encode())} bytes; the first line was: {sim_write.quoted(first_line)}\n",
            *written,
            *_review(prompt, output.number),
        ]
        for piece in pieces:
            await trio.sleep(self.step_delay)
            output.write(piece)
        if spent := _USAGE.search(prompt):
            tokens_in, tokens_out, usd = spent.groups()
            output.usage(Usage(int(tokens_in), int(tokens_out), cost_usd=float(usd) if usd else None))

    async def kill(self) -> None:
        return None


def _review(prompt: str, turn: int) -> list[str]:
    """What `sim:issues=N` asks for: an ISSUE line in the session's first N turns (its count of turns,
    which a restart keeps, so a run resumed answers as one never stopped), NO ISSUES after them."""
    asked = _ISSUES.search(prompt)
    if asked is None:
        return []
    rounds = int(asked.group(1))
    # worded without the directive itself: an answer quoted in the next prompt must not ask for more
    if turn <= rounds:
        return [f"ISSUE: a simulated problem, in turn {turn} of the first {rounds} that report one\n"]
    return [f"NO ISSUES (simulated: turn {turn}, past the first {rounds} that report one)\n"]
