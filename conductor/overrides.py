"""`run --backend`: the backends a run makes its sessions on, instead of those the workflow file declares.

    --backend sim                 every session the workflow makes (one with a backend) is made on sim
    --backend claude=sim          those declared on claude are made on sim (repeatable, one per OLD)

So an example written for one agent CLI runs on another, or on the simulated
agent, without editing the file (its digest, which the record keeps, stays
the same). Sessions without a backend (that must exist already) are not
touched: the workflow does not make them. The record keeps the backends a run
began with (journal.py): a run resumed with others is refused.
"""

from __future__ import annotations

import re

from .model import Workflow

BACKEND_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"


class OverrideError(ValueError):
    """A --backend that cannot be applied; the text says which and how to write it."""


def parse(values: list[str]) -> tuple[str | None, dict[str, str]]:
    """The --backend values as (NAME for every session, or None; {OLD: NEW})."""
    every: list[str] = []
    mapping: dict[str, str] = {}
    for value in values:
        old, eq, new = value.partition("=")
        for name in (old, new) if eq else (old,):
            if not re.fullmatch(BACKEND_NAME, name):
                raise OverrideError(f"--backend {value!r}: give NAME (every session) or OLD=NEW, each a backend's "
                                    "name (letters, digits, ., _ and -), e.g. --backend sim or --backend claude=sim")
        if not eq:
            every.append(old)
        elif old in mapping:
            raise OverrideError(f"--backend {value!r}: {old} is mapped twice (to {mapping[old]} and to {new}): "
                                "give one --backend OLD=NEW per OLD")
        else:
            mapping[old] = new
    if len(every) > 1 or (every and mapping):
        given = spelled(values).removeprefix("with ")
        raise OverrideError(f"{given}: give either one --backend NAME (every session) or --backend OLD=NEW "
                            "(as many as needed), not both")
    return (every[0] if every else None), mapping


def apply(workflow: Workflow, values: list[str]) -> Workflow:
    """The workflow with its sessions' backends overridden; itself if there are no values."""
    if not values:
        return workflow
    every, mapping = parse(values)
    declared = sorted({spec.backend for spec in workflow.sessions.values() if spec.backend is not None})
    if not declared:
        raise OverrideError(f"--backend: workflow {workflow.name!r} makes no session (none has a backend), so "
                            "there is nothing to override: leave --backend out")
    if unknown := sorted(set(mapping) - set(declared)):
        raise OverrideError(f"--backend {unknown[0]}={mapping[unknown[0]]}: no session of workflow "
                            f"{workflow.name!r} is declared on {unknown[0]} (its backends: {', '.join(declared)})")
    sessions = {name: spec if spec.backend is None else
                spec.model_copy(update={"backend": every or mapping.get(spec.backend, spec.backend)})
                for name, spec in workflow.sessions.items()}
    return workflow.model_copy(update={"sessions": sessions})


def backends(workflow: Workflow) -> dict[str, str]:
    """Each session the workflow makes, and the backend it makes it on: what the record keeps."""
    return {name: spec.backend for name, spec in workflow.sessions.items() if spec.backend is not None}


def spelled(values: list[str]) -> str:
    """How a run was started, for messages: `with --backend sim` or `without --backend`."""
    return "with " + " ".join(f"--backend {value}" for value in values) if values else "without --backend"
