"""The sessions a workflow needs: made when missing (with their backend, cwd, role, model, worktree), and groups
expanded."""

from __future__ import annotations

from pathlib import Path

from .access import Access, StepFailed, each
from .model import Workflow
from .overrides import spelled


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
        words = ["new", spec.backend, str((base / spec.cwd).resolve())]
        # a worktree of cwd's repository, on a branch of its own (SPEC §6a): its cwd is then the worktree
        words += ["worktree", *([f"base={spec.base}"] if spec.base else [])] if spec.worktree else []
        words += [f"name={name}"]
        words += [f"{key}={value}" for key, value in (("role", spec.role), ("model", spec.model)) if value]
        words += ["notify"] if spec.notify else []
        try:
            await access.ctl("ctl", " ".join(map(quote, words)))
        except StepFailed as exc:
            # made by an earlier run of ours that died before it saw the answer: that is fine
            if name not in await access.retry("list the tree", lambda: access.tree.ls("")):
                raise StepFailed(f"cannot make session {name}: {exc}") from None
        access.say(f"made session {name} ({spec.backend}{', in a worktree' if spec.worktree else ''})")


async def _worktree_held(access: Access, name: str) -> None:
    """A session declared `worktree = true` found already there: its cwd is its worktree, not the
    repository, so that is not compared; one made without a worktree is said, and used as it is."""
    if not (await access.text(f"{name}/worktree")).strip():
        access.say(f"session {name} exists without a worktree, though the workflow declares worktree = true: it is "
                   "used as it is (its agent works in its cwd, and the beads it claims get no branch to merge)")


async def check_existing(workflow: Workflow, base: Path, access: Access, override: list[str]) -> None:
    """The declared sessions that exist already, held against the workflow: one on another backend than
    the workflow makes it on is refused (StepFailed, before anything is sent: its prompts would go to
    another agent than the one declared, a real one's costing money and changing files, or a simulated
    one's answering in its place); one in another cwd is said on stderr and used as it is (a session
    made by hand for the workflow may well work elsewhere, and its work is still its own)."""
    present = set(await access.retry("list the tree", lambda: access.tree.ls("")))
    others: list[str] = []

    async def one(name: str) -> None:
        spec = workflow.sessions[name]
        if spec.backend is not None:
            backend = ((await access.text(f"{name}/backend")).split() or ["?"])[0]  # `sim simulated`: the name first
            if backend != spec.backend:
                others.append(f"{name} (on {backend}, not {spec.backend})")
        if spec.worktree:
            await _worktree_held(access, name)
        elif spec.cwd is not None:
            cwd, want = (await access.text(f"{name}/cwd")).strip(), (base / spec.cwd).resolve()
            if cwd != str(want) and Path(cwd).resolve() != want:
                access.say(f"session {name} exists with cwd {cwd}, not {want} as the workflow declares: "
                           f"it is used as it is (its agent works in {cwd})")

    await each(sorted(present & set(workflow.sessions)), one)
    if others:
        one_ = len(others) == 1
        note = f" ({spelled(override)})" if override else ""
        raise StepFailed(f"{'session' if one_ else 'sessions'} {', '.join(sorted(others))} "
                         f"{'exists' if one_ else 'exist'} on another backend than the workflow makes "
                         f"{'it' if one_ else 'them'} on{note}: a prompt meant for one agent would go to another. "
                         "Remove what is in the way (write stop, then remove, to SESSION/ctl) and run again, "
                         "or give a --backend that matches")
