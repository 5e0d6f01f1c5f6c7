"""The view's rows (sessions, beads in their waves, convoys, what each spent) from the files' lines,
each row kept from one view to the next.

With 10,000 beads, 1,000 convoys and 1,000 sessions, a claim changes two lines of some 25,000; parsing
them all again at each view (4 a second at most) cost `anvilfs web` a third of a core, which the
server then waited for (issue 32). So a row is kept under everything it is made of (its line, and the
other lines and cells it shows), made again only when one of these changed, and forgotten by the
first view that does not show it: what is kept follows the tree.

A view's rows are read (sent as JSON), never changed: two views share the rows that did not change.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

from ..client import spent

_UNKNOWN = object()


class Kept:
    """make(key) for each key of a view, those of the view before kept; only the last view's are."""

    def __init__(self, make: Callable[[Hashable], object]):
        self._make = make
        self._kept: dict = {}

    def all(self, keys: Iterable[Hashable]) -> list:
        before, now, make = self._kept, {}, self._make
        values = []
        for key in keys:
            value = before.get(key, _UNKNOWN)
            if value is _UNKNOWN:
                value = make(key)
            now[key] = value
            values.append(value)
        self._kept = now
        return values

    def __len__(self) -> int:
        return len(self._kept)


class Spending:
    """A `usage` file's lines (client/spent.py) as NAME -> figures and NAME -> cell; the same dicts
    while the text is the same (the file not read again: kept.Files)."""

    def __init__(self) -> None:
        self._lines = Kept(_usage_line)
        self._text: str | None = None
        self.figures: dict[str, dict[str, str]] = {}
        self.cells: dict[str, str] = {}

    def read(self, text: str) -> Spending:
        if text != self._text:
            parsed = [line for line in self._lines.all(text.splitlines()) if line is not None]
            self.figures = {name: figures for name, figures, _ in parsed}  # a name twice: the last line's
            self.cells = {name: cell for name, _, cell in parsed}
            self._text = text
        return self


def _usage_line(line: str) -> tuple[str, dict[str, str], str] | None:
    found = spent.lines(line)  # {} for a blank line
    if not found:
        return None
    [(name, figures)] = found.items()
    return name, figures, spent.cell(figures)


class Rows:
    """What one `anvilfs web` keeps of its views' rows (view.Reading holds it)."""

    def __init__(self) -> None:
        self.usage, self.bead_usage, self.convoy_usage = Spending(), Spending(), Spending()
        self._session_words = Kept(lambda line: tuple(line.split(" ", 4)))
        self._sessions = Kept(_session)
        self._graph: dict[str, tuple] = {}  # a graph line -> (its id, its `list` line, its cell, its bead)
        self._others = Kept(_bead)  # the beads of `list` that the graph leaves out
        self._waves: tuple = ((None, None, None), [])  # the last view's (graph, list, cells) and groups
        self._convoys = Kept(_convoy)

    def sessions(self, listing: str, queues: dict[str, int], last: dict[str, str], simulated: dict[str, bool],
                 cells: dict[str, str]) -> list[dict]:
        """`list` lines (name backend status role cwd [simulated]) with each queue's length, last event and
        what it spent (`usage`'s line, as a short cell).

        The cwd is the rest of the line, and may end in " simulated" itself: whether the word is the mark
        is the backend's to say (`simulated`, from kept.Backends), not the line's."""
        keys = []
        for words in self._session_words.all(listing.splitlines()):
            if len(words) < 5 or words[0] not in queues:
                continue
            name = words[0]
            keys.append((words, queues[name], last.get(name, "-"), simulated.get(words[1], False), cells.get(name, "-")))
        return self._sessions.all(keys)

    def waves(self, graph: str, listing: str, cells: dict[str, str]) -> list[dict]:
        """The groups of beads/graph (wave 1, wave 2 ..., done, blocked), each bead with its list line's fields.

        A graph line is "  ID STATUS  TITLE[  <- ID ...]"; a `beads/list` line "id status role assigned_to
        title" ("-" for no role or no claim). The title is known from `list` (the rest of its line), so
        what follows it is the arrow, whatever the title holds (a title "x  <- other-001" waits on
        nothing). A bead of `list` that the graph leaves out (a broken file) comes last, in a group of
        its own."""
        if (graph, listing, cells) == self._waves[0]:  # a view after events of sessions only
            return self._waves[1]
        listed = {line.partition(" ")[0]: line for line in listing.splitlines()}  # an id twice: the last line
        before, now, groups, beads = self._graph, {}, [], None
        kept_of, pop, cell_of = before.get, listed.pop, cells.get
        for line in graph.splitlines():  # one pass, the least done for a line that did not change
            if not line.startswith("  "):
                beads = []
                groups.append({"name": line.partition(" (")[0], "why": line.partition(" (")[2].rstrip(")"), "beads": beads})
                continue
            kept = kept_of(line)
            ident = line[2:].partition(" ")[0] if kept is None else kept[0]
            shown, cell = pop(ident, None), cell_of(ident, "-")
            if kept is None or kept[1] != shown or kept[2] != cell:  # a line twice: the second's kept
                kept = (ident, shown, cell, _bead((line, shown, cell)))
            now[line] = kept
            if beads is not None:  # a bead before any heading (a broken file) is left out
                beads.append(kept[3])
        self._graph = now
        others = self._others.all((None, line, cell_of(ident, "-")) for ident, line in listed.items())
        if others:
            groups.append({"name": "other", "why": "not in beads/graph (a broken file: see errors)", "beads": others})
        self._waves = ((graph, listing, cells), groups)
        return groups

    def convoys(self, listing: str, cells: dict[str, str]) -> list[dict]:
        """`convoys/list` lines: id status completed/total coordinator title; and what each spent."""
        return self._convoys.all((line, cells.get(line.partition(" ")[0], "-")) for line in listing.splitlines())

    def __len__(self) -> int:
        """How many rows are kept (the tests' measure that they follow the tree)."""
        return len(self._sessions) + len(self._graph) + len(self._others) + len(self._convoys)


def _session(key: tuple) -> dict:
    (name, backend, status, role, rest), queue, last, marked, cell = key
    return {"name": name, "backend": backend, "status": status, "role": role,
            "cwd": rest.removesuffix(" simulated") if marked else rest, "simulated": marked,
            "queue": queue, "last": last, "spent": cell}


def _bead(key: tuple[str | None, str | None, str]) -> dict:
    """A bead from its graph line and its `list` line (either may be None) and its cell."""
    line, listed, cell = key
    if listed is not None:
        ident, status, role, assigned, title = (listed.split(" ", 4) + ["", "", "", ""])[:5]
    if line is None:
        return {"id": ident, "status": status, "role": role, "assigned_to": assigned, "title": title,
                "waits_on": [], "spent": cell}
    ident, _, rest = line[2:].partition(" ")
    status_shown, _, shown = rest.partition("  ")
    if listed is None or not shown.startswith(title):  # made between the two reads: the graph's line alone
        title = shown.rpartition("  <- ")[0] if "  <- " in shown else shown
        status, role, assigned = status_shown, "-", "-"
    arrow = shown[len(title):]
    return {"id": ident, "status": status, "role": role, "assigned_to": assigned, "title": title,
            "waits_on": arrow.removeprefix("  <- ").split() if arrow.startswith("  <- ") else [], "spent": cell}


def _convoy(key: tuple[str, str]) -> dict:
    line, cell = key
    ident, status, progress, coordinator, title = (line.split(" ", 4) + ["", "", "", ""])[:5]
    done, _, total = progress.partition("/")
    return {"id": ident, "status": status, "done": int(done) if done.isdigit() else 0,
            "total": int(total) if total.isdigit() else 0, "coordinator": coordinator, "title": title,
            "spent": cell}
