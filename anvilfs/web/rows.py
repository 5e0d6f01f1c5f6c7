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

from ..client import spent
from .kept import Kept
from .waves import Waves


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
        self.bead_waves = Waves()  # public: the tests count its whole views
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
        """The groups of beads/graph, each bead with its list line's fields and its cell (waves.py)."""
        return self.bead_waves.view(graph, listing, cells)

    def convoys(self, listing: str, cells: dict[str, str]) -> list[dict]:
        """`convoys/list` lines: id status completed/total coordinator title; and what each spent."""
        return self._convoys.all((line, cells.get(line.partition(" ")[0], "-")) for line in listing.splitlines())

    def __len__(self) -> int:
        """How many rows are kept (the tests' measure that they follow the tree)."""
        return len(self._sessions) + len(self.bead_waves) + len(self._convoys)


def _session(key: tuple) -> dict:
    (name, backend, status, role, rest), queue, last, marked, cell = key
    return {"name": name, "backend": backend, "status": status, "role": role,
            "cwd": rest.removesuffix(" simulated") if marked else rest, "simulated": marked,
            "queue": queue, "last": last, "spent": cell}


def _convoy(key: tuple[str, str]) -> dict:
    line, cell = key
    ident, status, progress, coordinator, title = (line.split(" ", 4) + ["", "", "", ""])[:5]
    done, _, total = progress.partition("/")
    return {"id": ident, "status": status, "done": int(done) if done.isdigit() else 0,
            "total": int(total) if total.isdigit() else 0, "coordinator": coordinator, "title": title,
            "spent": cell}
