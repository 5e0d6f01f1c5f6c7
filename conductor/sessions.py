"""The sessions a workflow needs: made when missing (with their backend, cwd, role, model), and groups expanded."""

from __future__ import annotations

from pathlib import Path

from .access import Access, StepFailed
from .model import Workflow


def expand(workflow: Workflow, names: list[str]) -> list[str]:
    """Groups replaced by their members, in order, each session once."""
    out: list[str] = []
    for name in names:
        for member in workflow.groups.get(name, [name]):
            if member not in out:
                out.append(member)
    return out


def quote(word: str) -> str:
    """Plan 9 quoting for a ctl word (docs/using.md, "Ctl writes"): 'it''s'."""
    if word and not any(ch in word for ch in " \t'\"\\#"):
        return word
    return "'" + word.replace("'", "''") + "'"


async def ensure_sessions(workflow: Workflow, base: Path, access: Access) -> None:
    """`new` for each declared session that is not there; one without a backend must exist already."""
    present = set(await access.retry("list the tree", lambda: access.tree.ls("")))
    for name, spec in workflow.sessions.items():
        if name in present:
            continue
        if spec.backend is None:
            raise StepFailed(f"session {name} does not exist, and the workflow gives no backend to make it "
                             f"(add backend and cwd under [sessions.{name}])")
        words = ["new", spec.backend, str((base / spec.cwd).resolve()), f"name={name}"]
        words += [f"{key}={value}" for key, value in (("role", spec.role), ("model", spec.model)) if value]
        words += ["notify"] if spec.notify else []
        try:
            await access.ctl("ctl", " ".join(map(quote, words)))
        except StepFailed as exc:
            # made by an earlier run of ours that died before it saw the answer: that is fine
            if name not in await access.retry("list the tree", lambda: access.tree.ls("")):
                raise StepFailed(f"cannot make session {name}: {exc}") from None
        access.say(f"made session {name} ({spec.backend})")
