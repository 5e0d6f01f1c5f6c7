"""What the page shows, read from the tree's files: sessions, beads in waves, convoys, human's mail.

    sessions   list, and each session's queue       name status role queue last-event ...
    beads      beads/graph (the waves), beads/list   (role, claims)
    convoys    convoys/list                          id status completed/total coordinator title
    human      human/approvals, human/inbox/*.json

Only files, through one AsyncClient with the reads in flight together. The
parsers are pure functions of the files' text; a file's format is in
docs/using.md ("The tree") and docs/beads-and-mail.md ("Beads and convoys",
"Mail and approvals").
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import trio

from ..aioclient import AsyncClient, ServerError

INBOX_SHOWN = 200  # the newest messages shown; the page says how many there are in all
BODY_SHOWN = 4000  # characters of a message's body (a body may be 64 KiB)


async def gather(calls: dict[str, Callable[[], Awaitable]]) -> dict:
    """Run every call at once (one connection, many requests in flight); their results by key.

    The first call's error is raised as itself, not in an exception group, once all have ended."""
    results: dict = {}
    failed: list[Exception] = []

    async def one(key: str, call) -> None:
        try:
            results[key] = await call()
        except Exception as exc:  # noqa: BLE001 - raised below, after the others
            failed.append(exc)

    async with trio.open_nursery() as nursery:
        for key, call in calls.items():
            nursery.start_soon(one, key, call)
    if failed:
        raise failed[0]
    return results


def _text(fs: AsyncClient, path: str) -> Callable[[], Awaitable[str]]:
    async def read() -> str:
        return (await fs.read(path)).decode(errors="replace")
    return read


async def read_view(fs: AsyncClient, last: dict[str, str], inbox: Inbox) -> dict:
    """One snapshot of everything the page shows (last: each session's last event, from `events`)."""
    files = ("list", "beads/graph", "beads/list", "convoys/list", "human/approvals")
    texts = await gather({path: _text(fs, path) for path in files} | {"inbox": lambda: inbox.read(fs)})
    names = [line.split()[0] for line in texts["list"].splitlines() if line.split()]
    queues = await gather({name: _queue(fs, name) for name in names})
    return {
        "sessions": sessions(texts["list"], queues, last),
        "waves": waves(texts["beads/graph"], texts["beads/list"]),
        "convoys": convoys(texts["convoys/list"]),
        "approvals": approvals(texts["human/approvals"]),
        "inbox": texts["inbox"],
    }


def _queue(fs: AsyncClient, name: str) -> Callable[[], Awaitable[str | None]]:
    async def read() -> str | None:
        try:
            return (await fs.read(f"{name}/queue")).decode(errors="replace")
        except ServerError:
            return None  # removed between the two reads: the next event shows the list without it
    return read


def sessions(listing: str, queues: dict[str, str | None], last: dict[str, str]) -> list[dict]:
    """`list` lines (name backend status role cwd [simulated]) with each queue's length and last event."""
    rows = []
    for line in listing.splitlines():
        words = line.split(" ")
        if len(words) < 5 or queues.get(words[0]) is None:
            continue
        simulated = words[-1] == "simulated" and len(words) > 5
        rows.append({"name": words[0], "backend": words[1], "status": words[2], "role": words[3],
                     "cwd": " ".join(words[4:-1] if simulated else words[4:]), "simulated": simulated,
                     "queue": len(queues[words[0]].splitlines()), "last": last.get(words[0], "-")})
    return rows


def _beads_by_id(listing: str) -> dict[str, dict]:
    """`beads/list` lines: id status role assigned_to title ("-" for no role or no claim)."""
    beads = {}
    for line in listing.splitlines():
        ident, status, role, assigned, title = (line.split(" ", 4) + ["", "", "", ""])[:5]
        beads[ident] = {"id": ident, "status": status, "role": role, "assigned_to": assigned, "title": title,
                        "waits_on": []}
    return beads


def waves(graph: str, listing: str) -> list[dict]:
    """The groups of beads/graph (wave 1, wave 2 ..., done, blocked), each bead with its list line's fields.

    A bead of `list` that the graph leaves out (a broken file) comes last, in a group of its own."""
    beads, groups = _beads_by_id(listing), []
    for line in graph.splitlines():
        if not line.startswith("  "):
            groups.append({"name": line.partition(" (")[0], "why": line.partition(" (")[2].rstrip(")"), "beads": []})
            continue
        ident, _, rest = line.strip().partition(" ")
        bead = beads.pop(ident, None) or {"id": ident, "status": rest.split(" ")[0], "role": "-",
                                           "assigned_to": "-", "title": ""}
        waiting = rest.rpartition("  <- ")[2] if "  <- " in rest else ""
        bead["waits_on"] = waiting.split()
        if groups:
            groups[-1]["beads"].append(bead)
    if beads:
        groups.append({"name": "other", "why": "not in beads/graph (a broken file: see errors)",
                       "beads": list(beads.values())})
    return groups


def convoys(listing: str) -> list[dict]:
    """`convoys/list` lines: id status completed/total coordinator title."""
    rows = []
    for line in listing.splitlines():
        ident, status, progress, coordinator, title = (line.split(" ", 4) + ["", "", "", ""])[:5]
        done, _, total = progress.partition("/")
        rows.append({"id": ident, "status": status, "done": int(done) if done.isdigit() else 0,
                     "total": int(total) if total.isdigit() else 0, "coordinator": coordinator, "title": title})
    return rows


def approvals(text: str) -> list[dict]:
    """`human/approvals` lines: id from bead|- subject."""
    rows = []
    for line in text.splitlines():
        ident, sender, bead, subject = (line.split(" ", 3) + ["", "", ""])[:4]
        rows.append({"id": ident, "from": sender, "bead": "" if bead == "-" else bead, "subject": subject})
    return rows


class Inbox:
    """human's unacknowledged messages. A message never changes once delivered, so each is read once."""

    def __init__(self, participant: str = "human"):
        self.where = f"{participant}/inbox"
        self._known: dict[str, dict] = {}

    async def read(self, fs: AsyncClient) -> dict:
        names = sorted(name for name in await fs.ls(self.where) if name.endswith(".json"))
        shown = names[-INBOX_SHOWN:]
        self._known = {name: self._known[name] for name in shown if name in self._known}
        new = await gather({name: self._message(fs, name) for name in shown if name not in self._known})
        self._known.update({name: message for name, message in new.items() if message is not None})
        return {"total": len(names), "messages": [self._known[n] for n in reversed(shown) if n in self._known]}

    def _message(self, fs: AsyncClient, name: str) -> Callable[[], Awaitable[dict | None]]:
        async def read() -> dict | None:
            try:
                message = json.loads(await fs.read(f"{self.where}/{name}"))
            except (ServerError, ValueError):
                return None  # acknowledged meanwhile (or not a message): the next read leaves it out
            return shown_message(message)
        return read


def shown_message(message: dict) -> dict:
    """A message's fields as text for the page, its body cut at BODY_SHOWN characters."""
    fields = {key: str(message.get(key, "")) for key in ("id", "from", "type", "subject", "bead", "re", "timestamp")}
    body = str(message.get("body", ""))
    return fields | {"body": body[:BODY_SHOWN] + ("…" if len(body) > BODY_SHOWN else "")}
