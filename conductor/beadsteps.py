"""The bead and mail steps, each done once even across a crash.

- `bead new`: the ctl line's description is the step's marker line, so a
  bead a killed conductor may have made is found by its title and the first
  line of its description; the full description (marker, then the text) is
  written to the bead's `description` afterwards, which replaces it (so
  writing it twice is harmless). The result is {"bead": ID}.
- `bead claim` / `complete`: looked at first (a bead already held by that
  session, or already completed, is done), and an "already" refusal after a
  crash is read the same way. A claim for a worktree session refused while
  that session runs a turn is made again once the turn is over.
- `bead complete` with `no_change = "REASON"`: a worktree session's bead
  whose branch has nothing of its own is refused a plain `complete`
  (SPEC §6a); then it is completed as `no-change: REASON`.
- A bead this run claimed that the end of its holder's session released (a
  server restarted `--paused`, or a tmux agent gone with the old server:
  the session came back exited) is claimed again for that session, when
  the wait step restarts it and before `complete`: the work it goes on
  with is still its own.
- `mail`: the body ends with the marker line; a message a killed conductor
  may have sent is looked for in the recipient's inbox/ and done/.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .access import BUSY, StepFailed
from .model import BeadStep, MailStep
from .sessions import quote

if TYPE_CHECKING:
    from .engine import Engine
    from .lanes import At


FINISHED = ("completed", "pending_approval")


async def run(engine: Engine, step: BeadStep | MailStep, key: str, at: At) -> dict:
    if isinstance(step, MailStep):
        return await _mail(engine, step, key, at)
    if step.action == "new":
        return await _new(engine, step, key, at)
    bead = engine.bead(step.bead, at)
    if step.action == "claim":
        return await _claim(engine, step, at.name(step.session), bead)
    return await _complete(engine, step, bead, at)


async def _new(engine: Engine, step: BeadStep, key: str, at: At) -> dict:
    access, line = engine.access, engine.marker(step.id, at)
    uncertain = engine.journal.pending(key) is not None
    await engine.journal.begin(key, {"title": step.title})
    deps = [engine.bead(d, at) for d in step.depends_on]
    command = " ".join(map(quote, ["new", step.title, step.role, line, *deps]))
    bead = await access.once(f"beads/ctl: {command}", lambda: access.tree.ctl("beads/ctl", command),
                             lambda: _made(engine, step.title, line), uncertain=uncertain)
    if not bead or " " in bead:
        raise StepFailed(f"bead new {step.title!r}: the server answered {bead!r}, not an id")
    text = f"{line}\n{await engine.render(step.description, at)}"
    await access.retry(f"beads/{bead}/description", lambda: access.tree.write(f"beads/{bead}/description", text.encode()))
    access.say(f"{step.id}: bead {bead}")
    return {"bead": bead}


async def _made(engine: Engine, title: str, line: str) -> str | None:
    """The bead with this title whose description begins with the marker, if a conductor made it."""
    for row in (await engine.access.text("beads/list")).splitlines():
        parts = row.split(maxsplit=4)
        if len(parts) == 5 and parts[4] == title:
            description = await engine.access.text(f"beads/{parts[0]}/description")
            if description.splitlines()[:1] == [line]:
                return parts[0]
    return None


async def _claim(engine: Engine, step: BeadStep, session: str, bead: str) -> dict:
    await _take(engine, bead, session, step.lease)
    return {"claimed": bead}


async def _take(engine: Engine, bead: str, session: str, lease: int | None) -> None:
    """`claim` for the session, unless it holds the bead already."""
    async def held() -> bool:
        holder = (await engine.access.text(f"beads/{bead}/assigned_to")).strip()
        return await _status(engine, bead) == "in_progress" and holder == session

    while not await held():
        try:
            await engine.access.command(f"beads/{bead}/ctl", f"claim {quote(session)}{f' lease={lease}' if lease else ''}")
        except StepFailed:
            if await held():  # "already claimed by <us>" after a crash is success
                return
            if not await _in_a_turn(engine, session):
                raise
            # a worktree session's branch is not switched under a running agent (SPEC §6a): after its turn
            engine.access.say(f"bead {bead}: {session} is in a turn in its worktree: claiming it once the turn ends")
            await engine.access.state(session)


async def _in_a_turn(engine: Engine, session: str) -> bool:
    """Whether the session works in a worktree and is busy: the server refuses a claim for it until it is not."""
    word = ((await engine.access.text(f"{session}/status")).split() or ["?"])[0]
    return word in BUSY and bool((await engine.access.text(f"{session}/worktree")).strip())


async def _status(engine: Engine, bead: str) -> str:
    return (await engine.access.text(f"beads/{bead}/status")).strip()


async def claim_again(engine: Engine, session: str | None = None, bead: str | None = None) -> None:
    """The beads this run claimed (for `session`, or `bead`) that are pending again: their holder's session
    ended (a server restarted --paused brings sessions back exited), which released them. Claimed again for
    the same session, so that its work, resumed, is still done on a bead it holds."""
    for claimed, (holder, lease) in engine.claims.items():
        if session not in (None, holder) or bead not in (None, claimed):
            continue
        if await _status(engine, claimed) == "pending":
            engine.access.say(f"bead {claimed} was released when {holder} ended: claiming it again for {holder}")
            await _take(engine, claimed, holder, lease)


async def _complete(engine: Engine, step: BeadStep, bead: str, at: At) -> dict:
    access = engine.access
    if await _status(engine, bead) not in FINISHED:
        await claim_again(engine, bead=bead)
        if step.result:
            text = (await engine.render(step.result, at)).encode()
            await access.retry(f"beads/{bead}/result", lambda: access.tree.write(f"beads/{bead}/result", text))
        refused = await _send_complete(engine, bead, "complete")
        if refused is not None and step.no_change is not None and await _nothing_of_its_own(engine, bead, refused):
            # a worktree session's branch with nothing of its own (SPEC §6a): said so, with the reason given;
            # never sent first, since a branch that has work and says no-change is not merged
            access.say(f"bead {bead}: its branch has nothing of its own: completing it as no-change: {step.no_change}")
            refused = await _send_complete(engine, bead, f"complete no-change: {step.no_change}")
        if refused is not None:
            raise refused
    return {"completed": bead}


async def _nothing_of_its_own(engine: Engine, bead: str, refused: StepFailed) -> bool:
    """Whether the refusal is the one of a branch with nothing of its own (`complete no-change: REASON` only).
    A 9P error's text is cut to 128 bytes, so the full one is looked for in `errors` (its latest for the bead)."""
    if "no-change" in str(refused):
        return True
    about = f"complete: bead {bead}'s branch "
    latest = [line for line in (await engine.access.text("errors")).splitlines() if about in line]
    return bool(latest) and "no-change: REASON" in latest[-1]


async def _send_complete(engine: Engine, bead: str, line: str) -> StepFailed | None:
    """The refusal, unless the bead is completed all the same ("already", after a crash)."""
    try:
        await engine.access.command(f"beads/{bead}/ctl", line)
    except StepFailed as exc:
        if await _status(engine, bead) not in FINISHED:
            return exc
    return None


async def _mail(engine: Engine, step: MailStep, key: str, at: At) -> dict:
    access, line = engine.access, engine.marker(step.id, at)
    sender, to = at.name(step.sender), at.name(step.to)
    uncertain = engine.journal.pending(key) is not None
    if not uncertain:
        await engine.journal.begin(key, {"to": to})
    body = await engine.render(step.body, at)
    message = {"to": to, "type": step.type, "subject": step.subject, "body": f"{body}\n{line}" if body else line}
    answer = await access.once(f"mail {key} to {to}", lambda: access.tree.ctl(f"{sender}/mail", json.dumps(message)),
                               lambda: _sent(engine, sender, to, line), uncertain=uncertain)
    if not answer.isdigit():
        raise StepFailed(f"mail {key}: {answer}")
    return {"mail": answer}


async def _sent(engine: Engine, sender: str, to: str, line: str) -> str | None:
    for folder in ("inbox", "done"):
        for name in await engine.access.retry(f"ls {to}/{folder}", lambda: engine.access.tree.ls(f"{to}/{folder}")):
            message = json.loads(await engine.access.text(f"{to}/{folder}/{name}"))
            if message.get("from") == sender and message.get("body", "").splitlines()[-1:] == [line]:
                return name.removesuffix(".json")
    return None
