"""The page's beads in their waves, from `beads/graph` and `beads/list`: made again only where lines changed.

A claim changes one line of each file, of some 10,000 each. Going through every line at each view (4 a
second at most) cost `anvilfs web` 12-20 ms a view in Python, on the cores the server and its other
clients wanted (issue 32, item 6). So when both files have as many lines as at the last view and each
changed line is still the same bead's, only the rows of the beads whose graph line, list line or usage
cell changed are made again, in copies of the last view's groups (a view is never changed: a page may
still be sending it). Anything else (a bead added or gone, a wave's beads moved, a heading changed, an id
twice, a bead the graph leaves out or puts before any heading) goes through every line (_whole), which
the fast way is tested against (tests/web/test_rows.py).
"""

from __future__ import annotations

from itertools import compress
from operator import ne

from .kept import Kept

_KeptRow = tuple  # (its id, its `list` line or None, its cell, its row), under its graph line


class Waves:
    def __init__(self) -> None:
        self._rows: dict[str, _KeptRow] = {}  # a graph line -> what its row was made of, and the row
        self._others = Kept(_row)  # the rows of the beads of `list` that the graph leaves out
        self._inputs: tuple = (None, None, None)  # the last view's (graph, list, cells)
        self._groups: list[dict] = []
        # For the fast way, from a view it can follow (else None): both files' lines, and where each bead is:
        # its group, its place in the group's beads, its graph line's index, its list line's index (or None)
        self._lines: tuple[list[str], list[str]] | None = None
        self._places: dict[str, tuple[int, int, int, int | None]] = {}
        self.whole_views = 0  # views made through every line (the tests' measure of the fast way)

    def __len__(self) -> int:
        return len(self._rows) + len(self._others)

    def view(self, graph: str, listing: str, cells: dict[str, str]) -> list[dict]:
        """The groups of beads/graph (wave 1, wave 2 ..., done, blocked), each bead with its list line's fields.

        A graph line is "  ID STATUS  TITLE[  <- ID ...]"; a `beads/list` line "id status role assigned_to
        title" ("-" for no role or no claim). The title is known from `list` (the rest of its line), so
        what follows it is the arrow, whatever the title holds (a title "x  <- other-001" waits on
        nothing). A bead of `list` that the graph leaves out (a broken file) comes last, in a group of
        its own."""
        before = self._inputs
        if (graph, listing, cells) == before:  # a view after events of sessions only
            return self._groups
        graph_lines, list_lines = graph.splitlines(), listing.splitlines()
        groups = self._changed(graph_lines, list_lines, cells, before[2])
        if groups is None:
            groups = self._whole(graph_lines, list_lines, cells)
        self._inputs, self._groups = (graph, listing, cells), groups
        return groups

    def _changed(self, graph_lines: list[str], list_lines: list[str], cells: dict[str, str],
                 cells_before: dict[str, str] | None) -> list[dict] | None:
        """The last view's groups with the changed beads' rows made again; None if it takes _whole()."""
        if self._lines is None or cells_before is None:
            return None
        old_graph, old_list = self._lines
        if len(graph_lines) != len(old_graph) or len(list_lines) != len(old_list):
            return None
        dirty: dict[str, None] = {}
        for at in compress(range(len(graph_lines)), map(ne, graph_lines, old_graph)):
            new, old = graph_lines[at], old_graph[at]
            ident = _graph_id(old)
            if not (new.startswith("  ") and old.startswith("  ")) or _graph_id(new) != ident:
                return None  # a heading changed, or the line is another bead's: beads moved between waves
            dirty[ident] = None
        for at in compress(range(len(list_lines)), map(ne, list_lines, old_list)):
            ident = old_list[at].partition(" ")[0]
            if list_lines[at].partition(" ")[0] != ident:
                return None
            dirty[ident] = None
        if cells is not cells_before and cells != cells_before:
            dirty.update(dict.fromkeys(k for k in cells.keys() | cells_before.keys() if cells.get(k) != cells_before.get(k)))
        groups, copied, places, rows = list(self._groups), set(), self._places, self._rows
        for ident in dirty:
            place = places.get(ident)
            if place is None:
                continue  # a cell of a name no bead shown has (the graph shows every bead of `list` here)
            group, index, graph_at, list_at = place
            line, old_line = graph_lines[graph_at], old_graph[graph_at]
            shown, cell = (list_lines[list_at] if list_at is not None else None), cells.get(ident, "-")
            kept = rows.pop(old_line)
            if line != old_line or kept[1] != shown or kept[2] != cell:
                kept = (ident, shown, cell, _row((line, shown, cell)))
            rows[line] = kept
            if group not in copied:
                groups[group] = dict(groups[group], beads=list(groups[group]["beads"]))
                copied.add(group)
            groups[group]["beads"][index] = kept[3]
        self._lines = (graph_lines, list_lines)
        return groups

    def _whole(self, graph_lines: list[str], list_lines: list[str], cells: dict[str, str]) -> list[dict]:
        """Every line: the rows of lines that did not change kept (by the graph line, its list line, its cell)."""
        self.whole_views += 1
        ids = [line.partition(" ")[0] for line in list_lines]
        listed = dict(zip(ids, list_lines))  # an id twice: the last line
        list_at = dict(zip(ids, range(len(ids))))
        before, now, groups, beads = self._rows, {}, [], None
        kept_of, pop, cell_of = before.get, listed.pop, cells.get
        places: dict[str, tuple[int, int, int, int | None]] = {}
        followable = len(list_at) == len(list_lines)  # no id twice in `list`
        for graph_at, line in enumerate(graph_lines):  # one pass, the least done for a line that did not change
            if not line.startswith("  "):
                beads = []
                groups.append({"name": line.partition(" (")[0], "why": line.partition(" (")[2].rstrip(")"), "beads": beads})
                continue
            kept = kept_of(line)
            ident = _graph_id(line) if kept is None else kept[0]
            shown, cell = pop(ident, None), cell_of(ident, "-")
            if kept is None or kept[1] != shown or kept[2] != cell:  # a line twice: the second's kept
                kept = (ident, shown, cell, _row((line, shown, cell)))
            now[line] = kept
            if beads is None or ident in places:  # a bead before any heading (a broken file) is left out
                followable = False
            if beads is not None:
                places[ident] = (len(groups) - 1, len(beads), graph_at, list_at.get(ident))
                beads.append(kept[3])
        self._rows = now
        others = self._others.all((None, line, cell_of(ident, "-")) for ident, line in listed.items())
        if others:
            groups.append({"name": "other", "why": "not in beads/graph (a broken file: see errors)", "beads": others})
        followable = followable and not others
        self._lines, self._places = ((graph_lines, list_lines), places) if followable else (None, {})
        return groups


def _graph_id(line: str) -> str:
    return line[2:].partition(" ")[0]


def _row(key: tuple[str | None, str | None, str]) -> dict:
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
