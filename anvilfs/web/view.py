"""What the page shows, read from the tree's files: sessions, beads in waves, convoys, human's mail.

    sessions   list, each session's queue, backend    name status role queue last-event ...
               usage (one file for all)             what each spent
    beads      beads/graph (the waves), beads/list   (role, claims), beads/usage (what each spent)
    convoys    convoys/list, convoys/usage           id status completed/total coordinator title, spent
    human      human/approvals, human/inbox/*.json

Only files, through one AsyncClient with the reads in flight together. The
view is a function of the files' text (shown); its rows are made in rows.py,
each kept from view to view while its lines stay the same. A file's format
is in docs/using.md ("The tree") and docs/beads-and-mail.md ("Beads and
convoys", "Mail and approvals").
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial

import trio

from ..aioclient import AsyncClient, ServerError
from ..client import spent
from .kept import Backends, Files, Queues
from .rows import Rows

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


class Reading:
    """What one `anvilfs web` keeps from view to view: big files, queues, backends (kept.py), the inbox,
    the rows the files' lines made (rows.py)."""

    def __init__(self) -> None:
        self.files, self.queues, self.backends, self.inbox = Files(), Queues(), Backends(), Inbox()
        self.rows = Rows()


async def read_view(fs: AsyncClient, last: dict[str, str], kept: Reading) -> dict:
    """One snapshot of everything the page shows (last: each session's last event, from `events`)."""
    files = ("list", "beads/graph", "beads/list", "convoys/list", "human/approvals", "usage", "beads/usage",
             "convoys/usage")  # each read again only when its qid.version moved (the usage files: a turn counted)
    texts = await gather({path: kept.files.reader(fs, path) for path in files} | {"inbox": lambda: kept.inbox.read(fs)})
    listing = texts["list"]
    learn = {f"backend {b}": partial(kept.backends.learn, fs, b, name) for b, name in kept.backends.unknown(listing).items()}
    read = await gather({name: _queue(fs, name) for name in kept.queues.stale(listing)} | learn)
    queues = kept.queues.update(listing, {name: text for name, text in read.items() if not name.startswith("backend ")})
    return shown(texts, queues, last, kept.backends.simulated(), kept)


def shown(texts: dict, queues: dict[str, int], last: dict[str, str], simulated: dict[str, bool], kept: Reading) -> dict:
    """The view from the files' texts (by path; "inbox": the inbox already read): no I/O."""
    rows = kept.rows
    usage = rows.usage.read(texts["usage"])
    return {
        "sessions": rows.sessions(texts["list"], queues, last, simulated, usage.cells),
        "waves": rows.waves(texts["beads/graph"], texts["beads/list"], rows.bead_usage.read(texts["beads/usage"]).cells),
        "convoys": rows.convoys(texts["convoys/list"], rows.convoy_usage.read(texts["convoys/usage"]).cells),
        "total": spent.total_line(usage.figures),
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


Spending = dict[str, dict[str, str]]  # a `usage` listing, by name (client/spent.py)


# The rows of one view, nothing kept (rows.py has what they are made of).
def sessions(listing: str, queues: dict[str, int], last: dict[str, str], simulated: dict[str, bool],
             usage: Spending | None = None) -> list[dict]:
    return Rows().sessions(listing, queues, last, simulated, _cells(usage))


def waves(graph: str, listing: str, usage: Spending | None = None) -> list[dict]:
    return Rows().waves(graph, listing, _cells(usage))


def convoys(listing: str, usage: Spending | None = None) -> list[dict]:
    return Rows().convoys(listing, _cells(usage))


def _cells(usage: Spending | None) -> dict[str, str]:
    return {name: spent.cell(figures) for name, figures in (usage or {}).items()}


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
