"""What pydantic cannot see in one model: names that must exist, loops that must end, templates.

`problems(workflow)` gives (loc, message) pairs, loc a key path as in
pydantic's errors, so that `loading.py` can name the line of each.
"""

from __future__ import annotations

from collections.abc import Iterator

from .model import BeadStep, CheckStep, GateStep, MailStep, PromptStep, RepeatStep, Step, WaitStep, Workflow
from .templates import TemplateError, placeholders

Loc = tuple[str | int, ...]
Problem = tuple[Loc, str]


def walk(steps: list[Step], loc: Loc = ("steps",), depth: int = 0) -> Iterator[tuple[Step, Loc, int]]:
    """Every step with its loc and how many repeats hold it."""
    for i, step in enumerate(steps):
        yield step, loc + (i,), depth
        if isinstance(step, RepeatStep):
            yield from walk(step.steps, loc + (i, "steps"), depth + 1)


def bead_steps(workflow: Workflow) -> set[str]:
    return {s.id for s, _, _ in walk(workflow.steps) if isinstance(s, BeadStep) and s.action == "new"}


def problems(workflow: Workflow) -> list[Problem]:
    found = list(_names(workflow))
    seen: dict[str, Loc] = {}
    for step, loc, depth in walk(workflow.steps):
        if step.id in seen:
            found.append((loc + ("id",), f"step id {step.id!r} is used twice (also at {_dotted(seen[step.id])}); "
                                         "give each step its own id"))
        seen.setdefault(step.id, loc)
        found += [(loc + (key,), text) for key, text in _step(workflow, step, depth)]
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


def _step(workflow: Workflow, step: Step, depth: int) -> Iterator[tuple[str, str]]:
    known = set(workflow.sessions) | set(workflow.groups)
    if isinstance(step, PromptStep | WaitStep):
        field = "to" if isinstance(step, PromptStep) else "sessions"
        for name in getattr(step, field):
            if name not in known:
                yield field, _unknown(name, "session or group")
    if isinstance(step, CheckStep):
        yield from _check(step, known)
    if isinstance(step, CheckStep | GateStep):
        for key, outcome in (("then", step.then), ("else", step.else_)):
            if outcome == "break" and depth == 0:
                yield key, "'break' outside a repeat: use it in a repeat's steps, or 'finish' to end the workflow"
    if isinstance(step, RepeatStep) and not _has_exit(step):
        yield "steps", (f"repeat {step.id!r} has no exit: add a check or gate step in its steps whose then "
                        "or else is 'break' (or 'finish')")
    if isinstance(step, BeadStep):
        yield from _bead(step)
    if isinstance(step, MailStep):
        for key in ("sender", "to"):
            name = getattr(step, key)
            if name != "human" and name not in workflow.sessions:
                yield key, _unknown(name, "session (or human)")
    for key, text in _templates(step):
        yield from _template(workflow, key, text, depth)


def _check(step: CheckStep, known: set[str]) -> Iterator[tuple[str, str]]:
    given = [k for k in ("every", "any", "none") if getattr(step, k) is not None]
    if len(given) != 1:
        yield "contains", f"check {step.id!r} needs exactly one of every, any or none (a list of sessions); got {given or 'none'}"
    for key in given:
        for name in getattr(step, key):
            if name not in known:
                yield key, _unknown(name, "session or group")


def _has_exit(repeat: RepeatStep) -> bool:
    return any(isinstance(s, CheckStep | GateStep) and {"break", "finish"} & {s.then, s.else_}
               for s in repeat.steps)


def _bead(step: BeadStep) -> Iterator[tuple[str, str]]:
    needs = {"new": ("title", "role"), "claim": ("bead", "session"), "complete": ("bead",)}[step.action]
    for key in needs:
        if getattr(step, key) is None:
            yield key, f"bead {step.action} needs {key} (step {step.id!r})"


def _templates(step: Step) -> list[tuple[str, str]]:
    keys = {PromptStep: ("text",), BeadStep: ("description", "result"), MailStep: ("body",)}.get(type(step), ())
    return [(k, getattr(step, k)) for k in keys]


def _template(workflow: Workflow, key: str, text: str, depth: int) -> Iterator[tuple[str, str]]:
    try:
        found = placeholders(text)
    except TemplateError as exc:
        yield key, str(exc)
        return
    for p in found:
        if p.kind in ("round", "rounds") and depth == 0:
            yield key, f"{{{p.kind}}} outside a repeat: there is no round here"
        if p.kind == "out" and p.args[0] not in workflow.sessions:
            yield key, f"{{out.{p.args[0]}}}: " + _unknown(p.args[0], "session")


def _unknown(name: str, what: str) -> str:
    return f"unknown {what} {name!r}: declare it under [sessions.{name}] (or list it in [groups])"


def _dotted(loc: Loc) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(loc))
