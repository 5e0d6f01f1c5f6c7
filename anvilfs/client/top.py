"""`anvilfs top`: the sessions in a table (name, status, role, queue, spent, last event), redrawn from `events`.

    anvilfs top            follow agent/events; after each burst of events, read `list`, each
                           session's `queue` and `usage` (one file for all) again and redraw;
                           Ctrl-C ends it (status 130)
    anvilfs top --once     print the table once and exit

On a terminal the screen is cleared and the table drawn again; otherwise (a pipe, a file) each table
that differs from the one before is printed after a blank line, as plain text with no escape codes.
The last event of a session is the last `events` line naming it since top started ("-" before).
What each spent is a cell of client/spent.py; under the table, a line per open convoy (planning,
in_progress) with its progress and spending (top shows no beads; a finished convoy's spending no
longer moves, and `convoys/usage` has them all), and last the total of `usage`, removed sessions
included.
Only files, and only the light client: `events` is followed on a second connection, by a thread,
so that the table can be read on the first while the events wait.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from ..ninep import consts as c
from . import spent
from .client import Client, ServerError

QUIET = 0.1  # seconds without an event that end a burst: one redraw for a turn's several lines
MOST = 1.0  # a burst that goes on is still redrawn this often
COLUMNS = ("NAME", "STATUS", "ROLE", "QUEUE", "SPENT", "LAST EVENT")
CONVOY_COLUMNS = ("CONVOY", "STATUS", "DONE", "SPENT", "TITLE")
OPEN_CONVOYS = ("planning", "in_progress")  # the convoys top shows: those whose spending may still move
CLEAR = "\x1b[H\x1b[2J"  # cursor home, erase the screen


def _top_args(p) -> None:
    p.add_argument("--once", action="store_true", help="print the table once and exit")


PARSERS = {
    "top": ("show the sessions in a table that follows agent/events",
            "Name, status, role, queue length, spending and last event of each session, the total spent, "
            "and each open convoy's progress and spending; redrawn after each burst of events (plain text, "
            "each new table after a blank line, when output is not a terminal).",
            ["anvilfs top", "anvilfs top --once", "anvilfs -a 'tcp!127.0.0.1!5640' top"], _top_args),
}


def _join(root: str, path: str) -> str:
    return f"{root.strip('/')}/{path}".lstrip("/")


@dataclass(frozen=True, slots=True)
class View:
    """What one screen shows: a row per session, a row per open convoy, the total spent (a footer line).
    No blank line within: in a pipe, a blank line is what separates one screen from the next."""

    sessions: list[tuple[str, ...]]
    total: str
    convoys: list[tuple[str, ...]]

    def text(self, width: int | None = None) -> str:
        convoys = table(self.convoys, width, CONVOY_COLUMNS) if self.convoys else ""
        return table(self.sessions, width) + convoys + self.total[:width] + "\n"


def read_view(client: Client, root: str, last: dict[str, str]) -> View:
    usage = spent.lines(_read(client, root, "usage"))  # one read for every session's spending
    return View(rows(client, root, last, usage), spent.total_line(usage), convoy_rows(client, root))


def _read(client: Client, root: str, path: str) -> str:
    return client.read_file(_join(root, path)).decode(errors="replace")


def rows(client: Client, root: str, last: dict[str, str], usage: dict[str, dict[str, str]]) -> list[tuple[str, ...]]:
    """One row per session in `list`, with its queue's length and what it spent (a session gone meanwhile is
    left out)."""
    out = []
    for line in _read(client, root, "list").splitlines():
        name, _backend, status, role = (line.split() + ["-"] * 4)[:4]
        try:
            queue = _read(client, root, f"{name}/queue")
        except ServerError:
            continue  # removed between the two reads: the next event redraws without it
        out.append((name, status, role, str(len(queue.splitlines())), spent.cell(usage.get(name)), last.get(name, "-")))
    return out


def convoy_rows(client: Client, root: str) -> list[tuple[str, ...]]:
    """A row per open convoy of `convoys/list` (id status done/total coordinator title): its spending from
    `convoys/usage`, read only when there is one."""
    listing = [(line.split(" ", 4) + [""] * 4)[:5] for line in _read(client, root, "convoys/list").splitlines()]
    shown = [words for words in listing if words[1] in OPEN_CONVOYS]
    usage = spent.lines(_read(client, root, "convoys/usage")) if shown else {}
    return [(ident, status, done, spent.cell(usage.get(ident)), title) for ident, status, done, _, title in shown]


def table(entries: list[tuple[str, ...]], width: int | None = None, columns: tuple[str, ...] = COLUMNS) -> str:
    """The entries under `columns`, aligned; lines cut at ``width`` when given (a terminal's)."""
    widths = [max(len(row[i]) for row in [columns, *entries]) for i in range(len(columns) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in [columns, *entries]]
    return "\n".join(line.rstrip()[:width] for line in lines) + "\n"


def remember(last: dict[str, str], line: str) -> None:
    """An `events` line TIME NAME WHAT...: NAME's last event is "HH:MM:SS WHAT"."""
    when, _, rest = line.partition(" ")
    name, _, what = rest.partition(" ")
    if name and what and name != "-" and ":" not in name:  # not server-wide, bead:, convoy:, mail:
        last[name] = f"{when[11:19] or when} {what}"


def top(client: Client, root: str, args) -> int:
    if args.once:
        sys.stdout.write(read_view(client, root, {}).text())
        return 0
    with args.connect() as events:  # the second connection, for events alone
        fid = events.open(_join(root, "events"), c.OREAD)  # open before the first table: no event is missed
        screen, last, bursts = Screen(sys.stdout), {}, _follow(events, fid)
        while True:
            screen.show(read_view(client, root, last))
            for line in next(bursts):
                remember(last, line)


def _follow(events: Client, fid: int):
    """Yields the lines of each burst of events: a thread reads them, this waits for quiet.

    The wait is a select on a pipe the thread writes a byte to, not a queue: Ctrl-C raises
    KeyboardInterrupt wherever the main thread is, and inside a queue's Condition.wait it could come
    between the lock's release and its taking again, so that the `with` released it twice and top died
    of "RuntimeError: release unlocked lock" (exit 1) instead of ending with 130."""
    import collections  # noqa: PLC0415 - only the following mode needs these (every `anvilfs read` imports this module)
    import select  # noqa: PLC0415
    import threading  # noqa: PLC0415

    arrived: collections.deque = collections.deque()  # append and popleft are atomic: no lock of ours
    wake_read, wake_write = os.pipe()

    def pump() -> None:
        try:
            for data in events.read_chunks(fid):
                arrived.append(data)
                os.write(wake_write, b".")
            arrived.append(ServerError("agent/events ended"))
        except Exception as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            arrived.append(exc)
        os.write(wake_write, b".")

    def woken(timeout: float | None = None) -> bool:
        """Whether the thread wrote within `timeout` seconds (None: for ever); Ctrl-C interrupts it."""
        ready, _, _ = select.select([wake_read], [], [], timeout)
        if ready:
            os.read(wake_read, 1 << 16)  # every byte so far: `arrived` is looked at after each wake
        return bool(ready)

    threading.Thread(target=pump, name="anvilfs-top-events", daemon=True).start()
    pending = b""
    while True:
        while not arrived:
            woken()
        burst = [arrived.popleft()]
        end = time.monotonic() + MOST
        while (left := end - time.monotonic()) > 0:
            if arrived:
                burst.append(arrived.popleft())
            elif not woken(min(QUIET, left)):
                break
        for item in burst:
            if isinstance(item, Exception):
                raise item
        *done, pending = (pending + b"".join(burst)).split(b"\n")
        yield [line.decode(errors="replace") for line in done]


class Screen:
    """Where tables go: redrawn in place on a terminal, else printed when they change."""

    def __init__(self, out):
        self.out = out
        self.terminal = out.isatty()
        self.shown: str | None = None

    def show(self, view: View) -> None:
        if self.terminal:
            width = _columns(self.out)
            head = f"anvilfs top  {len(view.sessions)} sessions  {time.strftime('%H:%M:%S')}  (Ctrl-C ends)"
            self.out.write(f"{CLEAR}{head[:width]}\n\n{view.text(width)}")
        else:
            text = view.text()
            if text == self.shown:
                return
            self.out.write(("\n" if self.shown is not None else "") + text)
            self.shown = text
        self.out.flush()


def _columns(out) -> int:
    """The terminal's width; 80 when it does not say (a new pseudo-terminal is 0 wide)."""
    try:
        return os.get_terminal_size(out.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


COMMANDS = {"top": top}
