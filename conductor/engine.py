"""Running a workflow: steps in order, each recorded before and after, so a restart replays to where it was.

A run is a deterministic walk of the steps. Everything the walk decides on
that comes from outside (a check's reading of `out`, a gate's exit status,
a bead's new id) is recorded when it is first learned, and a restarted
conductor walks the same steps again from the top, taking each recorded
step's result from the journal instead of doing it again. So it reaches
the first step not done with the same rounds and the same bead ids, and
goes on from there; a step that was begun but not recorded done is
resolved (a prompt is looked for in its target's queue and log) before
anything is sent.

Step keys are `ID` or `ID@ROUNDS` (`fix@2`, `impl@1.3`), and in an each's
lane `ID[LANE]@ROUNDS` (lanes.py): unique, since step ids are, and stable
across restarts. `At` says where in the walk a step is (rounds, lane).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

from . import beadsteps, mergesteps
from .access import Access, StepFailed, beside, each
from .control import Control, Halted
from .journal import Journal
from .lanes import NEXT, At, Flow, run_lanes
from .markers import in_queue, lost_prompt, marker
from .model import (BeadStep, CheckStep, EachStep, GateStep, MergeStep, PromptStep, RepeatStep, Step, WaitStep,
                    Workflow)
from .report import NullReporter, Reporter
from .sessions import check_existing, ensure_sessions, expand
from .templates import placeholders, render


# after the first failure's text: the record keeps the run failed, and a `run` again only says so
FAILED_HINT = " (the run is over: `run` again only repeats this; `--again` starts a new one)"


class Engine:
    def __init__(self, workflow: Workflow, base: Path, access: Access, journal: Journal,
                 reporter: Reporter | None = None, override: list[str] | None = None):
        self.workflow, self.base, self.access, self.journal = workflow, base, access, journal
        self.override = override or []  # the --backend values (the workflow has them applied): for messages
        self.reporter = reporter or NullReporter()
        self.control = Control()
        self.beads: dict[str, str] = {}  # `bead new` step id (ID[LANE] in a lane) -> its bead (the latest)
        self.claims: dict[str, tuple[str, int | None]] = {}  # bead -> (session, lease) of this run's claim of it
        self._sure_lanes: set[str | None] = set()  # after a resume, the lanes past their first fresh prompt

    async def run(self) -> tuple[str, str]:
        """(outcome, why): 'done' or 'failed' (recorded: the run is over), 'stopped' or 'interrupted' (the
        record is kept, to resume), or 'refused' (a session there on another backend than the run makes it on,
        or the conductor's session could not be had; nothing done)."""
        if (finished := self.journal.finished) is not None:
            await self.reporter.finish(finished["outcome"], finished["why"])  # if a crash came before it
            # the line of a run that ended before: said so, lest it read as this command's doing
            ended = "failed" if finished["outcome"] == "failed" else "is done"
            return finished["outcome"], f"{finished['why']} (this run {ended}; `--again` starts a new one)"
        try:
            await check_existing(self.workflow, self.base, self.access, self.override)
            await self.reporter.start()
        except StepFailed as exc:
            return "refused", str(exc)
        except Halted as halted:
            return self._halt(halted)
        async with self.reporter.watching(self.control):
            flow = await self._walk()  # raises nothing: a nursery would wrap it in a group
        if flow.kind == "halt":
            return self._halt(self.control.halted)
        outcome = "failed" if flow.kind == "fail" else "done"
        why = flow.why or f"all steps of {self.workflow.name} done"
        self.journal.end(outcome, why)
        await self.reporter.finish(outcome, why)
        if outcome == "failed":  # a run again (with another --backend, say) would only repeat it: say so now
            return outcome, f"{why}{FAILED_HINT}"
        return outcome, why

    async def _walk(self) -> Flow:
        try:
            await ensure_sessions(self.workflow, self.base, self.access)
            return await self.steps(self.workflow.steps, At())
        except StepFailed as exc:
            return Flow("fail", str(exc))
        except Halted:
            return Flow("halt")

    def _halt(self, halted: Halted) -> tuple[str, str]:
        self.journal.halt(halted.outcome, halted.why)
        self.access.say(f"{halted.outcome}: the record is kept; run again to go on")
        return halted.outcome, halted.why

    async def steps(self, steps: list[Step], at: At) -> Flow:
        for step in steps:
            flow = await self.step(step, at)
            if flow.kind != "next":
                return flow
        return NEXT

    async def step(self, step: Step, at: At) -> Flow:
        key = at.key(step.id)
        if isinstance(step, RepeatStep):
            return await self.repeat(step, at)
        if isinstance(step, EachStep):
            return await run_lanes(self, step, at)
        if self.journal.is_done(key):
            return self._replayed(step, key, at)
        self.control.check()
        if isinstance(step, WaitStep | GateStep | MergeStep) and at.lane is None:
            # what others read is the step it waits in; the steps between two waits take milliseconds, and
            # a status write among their requests would only delay them (a lane's: lanes.py counts them)
            self.reporter.update(step.id, at.rounds)
        self.access.say(f"{key}: {step.kind}")
        if isinstance(step, WaitStep | CheckStep | GateStep | MergeStep):
            return await self.look(step, key, at)
        with trio.CancelScope(shield=at.lane is not None):  # an action and its record: a failing lane waits
            if isinstance(step, PromptStep):
                await self.prompt(step, key, at)
            else:
                result = await beadsteps.run(self, step, key, at)
                self.journal.finish(key, result)
                self._learn(step, result, at)
        return NEXT

    async def look(self, step: WaitStep | CheckStep | GateStep | MergeStep, key: str, at: At) -> Flow:
        """A step that only looks: recorded lazily, and abandoned by a halt (done again on a resume)."""
        with self.control.abandonable(), at.looking():
            if isinstance(step, WaitStep):
                await self.wait(step, at)
                self.journal.finish(key, lazy=True)
                return NEXT
            if isinstance(step, MergeStep):
                result = await mergesteps.merge(self, step, key, at)
                self.journal.finish(key, result, lazy=True)
                return Flow(result["outcome"], result["why"])
            outcome = await (self.check(step, at) if isinstance(step, CheckStep) else self.gate(step, key, at))
        self.journal.finish(key, outcome, lazy=True)
        return Flow(outcome, f"{key}: {step.kind} chose {outcome}")

    def _replayed(self, step: Step, key: str, at: At) -> Flow:
        result = self.journal.done(key)
        if isinstance(step, MergeStep):
            return Flow(result["outcome"], result["why"])
        if isinstance(step, CheckStep | GateStep):
            return Flow(result, f"{key}: {step.kind} chose {result}")
        self._learn(step, result, at)
        return NEXT

    def _learn(self, step: Step, result, at: At) -> None:
        if isinstance(result, dict) and "bead" in result:
            self.beads[at.local(step.id)] = result["bead"]
        if isinstance(result, dict) and "claimed" in result and isinstance(step, BeadStep):
            self.claims[result["claimed"]] = (at.name(step.session), step.lease)

    def bead(self, ref: str, at: At) -> str:
        """The bead a step names: the one its lane's `bead new` made, else that of a step outside, else an id."""
        return self.beads.get(at.local(ref)) or self.beads.get(ref, ref)

    async def repeat(self, step: RepeatStep, at: At) -> Flow:
        for number in range(1, step.max_rounds + 1):
            flow = await self.steps(step.steps, at.round(number))
            if flow.kind == "break":
                return NEXT
            if flow.kind != "next":
                return flow
        if step.exhausted == "next":
            return NEXT
        return Flow("fail", f"repeat {at.key(step.id)}: still going after max_rounds = {step.max_rounds}")

    # ------------------------------------------------------------ the steps

    async def prompt(self, step: PromptStep, key: str, at: At) -> None:
        line = self.marker(step.id, at)
        # all at once: 8 at a time made the first land sooner but the last later (benchmarks/history.md)
        if (intent := self.journal.pending(key)) is None:
            intent = {"text": f"{line}\n{await self.render(step.text, at)}",
                      "targets": expand(self.workflow, at.names(step.to))}
            uncertain = self._maybe_sent_before(at)
            # the step's record goes to disk beside its delivery, not before it: one fdatasync fewer on
            # the way from an `await` to the next prompt. The step ends only once both are done, so at most
            # one prompt of a lane can have been sent without its record: a resume looks for that one
            await beside(lambda: self.journal.begin(key, intent),
                         lambda: each(intent["targets"], lambda t: self._deliver(t, intent["text"], line, uncertain)))
        else:
            # a conductor before this one may have sent some of them
            await each(intent["targets"], lambda target: self._deliver(target, intent["text"], line, True))
        # lazy: lost to a crash, the step is still begun, and a restart finds each prompt in its target's
        # queue or log before it would send it; so no fdatasync here, in the loop every lane shares
        self.journal.finish(key, {"targets": intent["targets"]}, lazy=True)

    def _maybe_sent_before(self, at: At) -> bool:
        """After a resume, a lane's first prompt step that its record does not show begun may have been
        sent all the same (killed before the record was on disk): its targets' queue and log are read
        before it is sent. Later ones follow a step recorded by this run."""
        if not self.journal.resumed or at.lane in self._sure_lanes:
            return False
        self._sure_lanes.add(at.lane)
        return True

    async def _deliver(self, target: str, text: str, line: str, uncertain: bool) -> None:
        if not await self.access.deliver(target, text, line, uncertain=uncertain):
            self.access.say(f"{line} was already in {target}'s queue or log: not sent again")

    async def wait(self, step: WaitStep, at: At) -> None:
        names = expand(self.workflow, at.names(step.sessions))
        await each(names, lambda name: self._wait_one(name, tuple(step.status)))

    async def _wait_one(self, name: str, accept: tuple[str, ...]) -> None:
        while (word := await self.access.state(name)) not in accept:
            if word == "exited" and self.workflow.sessions[name].backend is not None:
                # a server restarted --paused brings sessions back exited, their queue kept (and the beads
                # they held released): claim them again, ask again what the stop cut short, and run it
                await beadsteps.claim_again(self, name)
                await self._ask_again(name)
                self.access.say(f"{name} is exited: restarting it")
                await self.access.command(f"{name}/ctl", "restart")
                continue
            if word == "error" and await self._ask_again(name):
                continue
            status = (await self.access.text(f"{name}/status")).strip()
            raise StepFailed(f"session {name} is {status!r}, not {' or '.join(accept)}")

    async def _ask_again(self, name: str) -> bool:
        """A prompt of this run's whose turn a server stop cut short (SPEC §5: not run again unasked) is sent
        again: the step waits for its answer, which never came. True if one was."""
        text = lost_prompt(await self.access.text(f"{name}/log"))
        if text is None or not text.startswith(f"[conductor {self.workflow.name} run {self.journal.run}"):
            return False
        line = text.splitlines()[0]

        async def sent() -> bool | None:  # a send that broke off may have landed: in the queue, or run since
            queue = await self.access.text(f"{name}/queue")
            return True if in_queue(queue, line) or lost_prompt(await self.access.text(f"{name}/log")) is None else None

        self.access.say(f"{name}: the turn on {line} was cut short by a server stop: asking again")
        return await self.access.once(f"prompt {line} to {name} again", lambda: self._send(name, text), sent,
                                      uncertain=False)

    async def _send(self, name: str, text: str) -> bool:
        await self.access.tree.write(f"{name}/in", text.encode())
        return True

    async def check(self, step: CheckStep, at: At) -> str:
        which = "every" if step.every is not None else "any" if step.any is not None else "none"
        names = expand(self.workflow, at.names(getattr(step, which)))
        hits = [step.contains in await self.access.text(f"{name}/out") for name in names]
        holds = {"every": all(hits), "any": any(hits), "none": not any(hits)}[which]
        self.access.say(f"{at.key(step.id)}: {which} of {names} contains {step.contains!r}: {holds}")
        return step.then if holds else step.else_

    async def gate(self, step: GateStep, key: str, at: At) -> str:
        await self.journal.begin(key, {"run": step.run})  # a gate begun and not recorded is run again
        cwd = self.base / (step.cwd or ".")
        env = os.environ | {"CONDUCTOR_ROUND": str(at.rounds[-1]) if at.rounds else "",
                            "CONDUCTOR_ROUNDS": at.dotted, "CONDUCTOR_LANE": at.lane or "",
                            "CONDUCTOR_WORKTREE": await self._lane_worktree(at)}
        try:
            with trio.fail_after(step.timeout):
                # its output to our stderr, with our progress: stdout is the run's one final line
                done = await trio.run_process(step.run, cwd=cwd, env=env, check=False, stdout=sys.stderr.fileno())
            status = done.returncode
        except trio.TooSlowError:
            status = f"killed after its timeout of {step.timeout:g}s"
        except OSError as exc:
            raise StepFailed(f"gate {step.id}: cannot run {step.run[0]}: {exc.strerror or exc}") from None
        self.access.say(f"gate {key}: {step.run} exited {status}")
        return step.then if status == 0 else step.else_

    # ------------------------------------------------------------ helpers

    async def _lane_worktree(self, at: At) -> str:
        """The lane's session's worktree (a gate tests the lane's work there), else empty."""
        spec = self.workflow.sessions.get(at.lane) if at.lane else None
        return (await self.access.text(f"{at.lane}/worktree")).strip() if spec and spec.worktree else ""

    def marker(self, step_id: str, at: At) -> str:
        return marker(self.workflow.name, self.journal.run, at.rounds, step_id, at.lane)

    async def render(self, text: str, at: At) -> str:
        values = {}
        for p in placeholders(text):
            if p.kind == "round":
                values[p] = str(at.rounds[-1])
            elif p.kind == "rounds":
                values[p] = at.dotted
            elif p.kind == "session":
                values[p] = at.lane
            elif p.kind in ("out", "worktree"):
                values[p] = (await self.access.text(f"{at.name(p.args[0])}/{p.kind}")).rstrip("\n")
            else:
                bead = self.bead(p.args[0], at)
                values[p] = (await self.access.text(f"beads/{bead}/{p.args[1]}")).rstrip("\n")
        return render(text, values)
