"""Read a workflow file: TOML, then the pydantic models, then the cross-checks; errors name the line.

    workflow = load("review.toml")          # WorkflowError: every problem, one per line
    FILE:LINE: steps[1].to: unknown session or group 'r9': declare it under [sessions.r9] ...
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from .checks import _dotted, problems
from .locate import Locator
from .model import KINDS, Workflow

_ADAPTER = TypeAdapter(Workflow)


class WorkflowError(Exception):
    """A workflow file that cannot be run; the text has a line per problem: FILE:LINE: where: what."""


@dataclass(frozen=True, slots=True)
class Loaded:
    workflow: Workflow
    path: Path
    digest: str  # of the file's bytes: a resumed run refuses a changed workflow


def load(path: str | Path) -> Loaded:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise WorkflowError(f"{path}: cannot read the workflow: {exc.strerror or exc}") from None
    return Loaded(parse(raw.decode("utf-8", errors="replace"), str(path)), path.resolve(),
                  hashlib.sha256(raw).hexdigest())


def parse(source: str, name: str = "<workflow>") -> Workflow:
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise WorkflowError(f"{name}:{line.group(1) if line else '?'}: not valid TOML: {exc}") from None
    locator = Locator(source)
    try:
        workflow = _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise WorkflowError(_report(name, locator, [(_clean(e["loc"]), _message(e)) for e in exc.errors()])) from None
    if found := problems(workflow):
        raise WorkflowError(_report(name, locator, found))
    return workflow


def _clean(loc: tuple) -> tuple:
    """pydantic puts the union's tag in the path (steps, 0, 'prompt', 'to'): leave it out."""
    out: list = []
    for i, part in enumerate(loc):
        if part in KINDS and i > 0 and isinstance(loc[i - 1], int) and i + 1 < len(loc):
            continue
        out.append(part)
    return tuple(out)


def _message(error: dict) -> str:
    kind, ctx = error["type"], error.get("ctx", {})
    if kind == "union_tag_invalid":
        return f"unknown step kind {ctx.get('tag')!r}: kind is one of {', '.join(KINDS)}"
    if kind == "union_tag_not_found":
        return f"a step needs kind = one of {', '.join(KINDS)}"
    if kind == "missing":
        return f"{error['loc'][-1]} is required here"
    if kind == "extra_forbidden":
        return f"unknown key {error['loc'][-1]!r}: see conductor/README.md for what a {_where(error['loc'])} takes"
    return error["msg"]


def _where(loc: tuple) -> str:
    return "step" if "steps" in loc else ("session" if "sessions" in loc else "workflow")


def _report(name: str, locator: Locator, found: list[tuple[tuple, str]]) -> str:
    lines = []
    for loc, text in found:
        line = locator.line_of(loc)
        lines.append(f"{name}:{line if line is not None else '?'}: {_dotted(loc) or '(top)'}: {text}")
    return "\n".join(lines)
