"""What pydantic cannot see in one model: names that must exist, loops that must end, templates.

`problems(workflow)` gives (loc, message) pairs, loc a key path as in
pydantic's errors, so that `loading.py` can name the line of each.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from .model import (LANE, BeadStep, CheckStep, EachStep, GateStep, MailStep, MergeStep, PromptStep, RepeatStep, Step,
                    WaitStep, Workflow)
from .templates import TemplateError, placeholders

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


@dataclass(frozen=True, slots=True)
class Scope:
    """What holds a step: how many repeats (for rounds), the each it is in, and the repeats inside that each."""

    repeats: int = 0
    each: str | None = None
    lane_repeats: int = 0

    def into(self, step: RepeatStep | EachStep) -> Scope:
        if isinstance(step, EachStep):
            return replace(self, each=step.id, lane_repeats=0)
        return replace(self, repeats=self.repeats + 1, lane_repeats=self.lane_repeats + 1)

    @property
    def breakable(self) -> bool:
        """A break here leaves a repeat: one inside the lane, in an each (a break does not leave a lane)."""
        return (self.lane_repeats if self.each else self.repeats) > 0


def walk(steps: list[Step], loc: Loc = ("steps",), scope: Scope = Scope()) -> Iterator[tuple[Step, Loc, Scope]]:
    """Every step with its loc and what holds it."""
    for i, step in enumerate(steps):
        yield step, loc + (i,), scope
        if isinstance(step, RepeatStep | EachStep):
            yield from walk(step.steps, loc + (i, "steps"), scope.into(step))


def problems(workflow: Workflow) -> list[Problem]:
    found = list(_names(workflow))
    seen: dict[str, Loc] = {}
    for step, loc, scope in walk(workflow.steps):
        if step.id in seen:
            found.append((loc + ("id",), f"step id {step.id!r} is used twice (also at {_dotted(seen[step.id])}); "
                                         "give each step its own id"))
        seen.setdefault(step.id, loc)
        found += [(loc + (key,), text) for key, text in _step(workflow, step, scope)]
    return found


def _names(workflow: Workflow) -> Iterator[Problem]:
    for group, members in workflow.groups.items():
        if group in workflow.sessions:
            yield ("groups", group), f"group {group!r} has the name of a session: name it differently"
        for i, name in enumerate(members):
            if name not in workflow.sessions:
                yield ("groups", group, i), _unknown(name, "session")
    for name, spec in workflow.sessions.items():
        if spec.backend is not None and spec.cwd is None:
            yield ("sessions", name, "backend"), f"session {name!r} has a backend but no cwd: add cwd = \"/path\""
        if spec.worktree and spec.backend is None:
            yield ("sessions", name, "worktree"), (f"session {name!r} asks for a worktree but has no backend: only a "
                                                   "session the workflow makes gets one (add backend and cwd, cwd "
                                                   "a git repository)")
        if spec.base is not None and not spec.worktree:
            yield ("sessions", name, "base"), (f"session {name!r} has a base but no worktree: base is the branch a "
                                               "worktree session's beads branch from; add worktree = true")


def _step(workflow: Workflow, step: Step, scope: Scope) -> Iterator[tuple[str, str]]:
    known = set(workflow.sessions) | set(workflow.groups)
    for key in _name_lists(step):
        for name in getattr(step, key):
            if (problem := _ref(name, scope, known, "session or group")) is not None:
                yield key, problem
    if isinstance(step, CheckStep) and len(given := _name_lists(step)) != 1:
        yield "contains", f"check {step.id!r} needs exactly one of every, any or none (a list of sessions); got {given or 'none'}"
    if isinstance(step, CheckStep | GateStep | MergeStep):
        for key, outcome in (("then", step.then), ("else", step.else_)):
            if outcome == "break" and not scope.breakable:
                yield key, _no_break(scope)
    if isinstance(step, RepeatStep) and step.exhausted == "fail" and not _has_exit(step):
        yield "steps", (f"repeat {step.id!r} has no exit: add a check or gate step in its steps whose then "
                        "or else is 'break' (or 'finish'), or say exhausted = \"next\" for a fixed count of rounds")
    if isinstance(step, EachStep) and scope.each is not None:
        yield "kind", (f"each {step.id!r} is inside each {scope.each!r}: an each's steps cannot hold another "
                       "each; give the outer one's lanes these steps, or put this each after it")
    if isinstance(step, BeadStep):
        yield from _bead(step, scope, set(workflow.sessions))
    if isinstance(step, MailStep):
        for key in ("sender", "to"):
            name = getattr(step, key)
            if name != "human" and (problem := _ref(name, scope, set(workflow.sessions), "session (or human)")):
                yield key, problem
    for key, text in _templates(step):
        yield from _template(workflow, key, text, scope)


def _name_lists(step: Step) -> list[str]:
    """The fields of a step that list sessions or groups."""
    if isinstance(step, CheckStep):
        return [k for k in ("every", "any", "none") if getattr(step, k) is not None]
    return {PromptStep: ["to"], WaitStep: ["sessions"], EachStep: ["sessions"]}.get(type(step), [])


def _ref(name: str, scope: Scope, known: set[str], what: str) -> str | None:
    """What is wrong with a session name in a step (None: nothing); `{session}` is the lane's, in an each."""
    if name == LANE:
        return None if scope.each else _outside(LANE)
    return None if name in known else _unknown(name, what)


def _outside(what: str) -> str:
    return f"{what} outside an each: it stands for the lane's session, in the steps of an each"


def _no_break(scope: Scope) -> str:
    if scope.each:
        return (f"'break' in each {scope.each!r} outside a repeat of the lane: a lane's break leaves a repeat "
                "in its steps; 'finish' ends the lane")
    return "'break' outside a repeat: use it in a repeat's steps, or 'finish' to end the workflow"


def _has_exit(repeat: RepeatStep) -> bool:
    return any(isinstance(s, CheckStep | GateStep | MergeStep) and {"break", "finish"} & {s.then, s.else_}
               for s in repeat.steps)


def _bead(step: BeadStep, scope: Scope, sessions: set[str]) -> Iterator[tuple[str, str]]:
    needs = {"new": ("title", "role"), "claim": ("bead", "session"), "complete": ("bead",)}[step.action]
    for key in needs:
        if getattr(step, key) is None:
            yield key, f"bead {step.action} needs {key} (step {step.id!r})"
    if step.session is not None and (problem := _ref(step.session, scope, sessions, "session")) is not None:
        yield "session", problem
    if step.no_change is not None and step.action != "complete":
        yield "no_change", f"no_change goes with action = \"complete\" (step {step.id!r} is a bead {step.action})"


def _templates(step: Step) -> list[tuple[str, str]]:
    keys = {PromptStep: ("text",), BeadStep: ("description", "result"), MailStep: ("body",)}.get(type(step), ())
    return [(k, getattr(step, k)) for k in keys]


def _template(workflow: Workflow, key: str, text: str, scope: Scope) -> Iterator[tuple[str, str]]:
    try:
        found = placeholders(text)
    except TemplateError as exc:
        yield key, str(exc)
        return
    for p in found:
        if p.kind in ("round", "rounds") and scope.repeats == 0:
            yield key, f"{{{p.kind}}} outside a repeat: there is no round here"
        if p.kind == "session" and not scope.each:
            yield key, _outside("{session}")
        if p.kind in ("out", "worktree") and (problem := _ref(p.args[0], scope, set(workflow.sessions), "session")):
            yield key, f"{{{p.kind}.{p.args[0]}}}: " + problem


def _unknown(name: str, what: str) -> str:
    return f"unknown {what} {name!r}: declare it under [sessions.{name}] (or list it in [groups])"


def _dotted(loc: Loc) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(loc))
