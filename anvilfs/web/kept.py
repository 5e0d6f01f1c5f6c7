"""What the view keeps between reads, so that a burst of events does not read the whole tree again.

With 10,000 beads, 1,000 convoys and 1,000 sessions, reading `beads/graph`, `beads/list`,
`convoys/list` and every session's `queue` after each burst cost the server more than its other
clients (issue 32). So:

    Files    a file is read again only when its qid.version moved (a stat, answered from the stamp the
             server keeps: docs/using.md, "Stamps"); the version is a checksum of the text, so an
             unchanged one means the text kept is the text
    Queues   a session's queue is read again only when an `events` line named the session, or its
             `list` line changed (a prompt queued, a turn begun or ended, a stop: each says so there)
    Backends whether a backend is simulated, read once from a session's `backend` file (NAME[ simulated]:
             a backend name has no space), never from the tail of a `list` line that ends in a cwd
    Kept     a row of the view made from a line (and what else it shows) is made again only when one of
             these changed (rows.py, waves.py)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable

from ..aioclient import AsyncClient, ServerError


class Files:
    def __init__(self) -> None:
        self._kept: dict[str, tuple[int, str]] = {}  # path -> (qid.version, text)

    async def text(self, fs: AsyncClient, path: str) -> str:
        version = (await fs.stat(path)).qid.version
        kept = self._kept.get(path)
        if kept is None or kept[0] != version:  # read after the stat: the text is never older than its version
            kept = self._kept[path] = (version, (await fs.read(path)).decode(errors="replace"))
        return kept[1]

    def reader(self, fs: AsyncClient, path: str) -> Callable[[], Awaitable[str]]:
        return lambda: self.text(fs, path)


class Queues:
    def __init__(self) -> None:
        self._lengths: dict[str, int] = {}
        self._lines: dict[str, str] = {}  # session -> its `list` line when its queue was read
        self._named: set[str] = set()  # sessions an event named since their queue was read

    def named(self, session: str) -> None:
        self._named.add(session)

    def stale(self, listing: str) -> list[str]:
        """The sessions of `listing` whose queue must be read again."""
        stale = []
        for line in listing.splitlines():
            name = line.split(" ", 1)[0]
            if name and (name in self._named or self._lines.get(name) != line):
                stale.append(name)
                self._lines[name] = line
                self._named.discard(name)  # before the read: an event during it marks it again
        return stale

    def update(self, listing: str, read: dict[str, str | None]) -> dict[str, int]:
        """Each listed session's queue length, with the queues just `read` (None: removed meanwhile)."""
        for name, text in read.items():
            if text is None:
                self._lengths.pop(name, None)
                self._lines.pop(name, None)
            else:
                self._lengths[name] = len(text.splitlines())
        names = {line.split(" ", 1)[0] for line in listing.splitlines()}
        self._lengths = {name: n for name, n in self._lengths.items() if name in names}
        self._lines = {name: line for name, line in self._lines.items() if name in names}
        self._named &= names  # events name beads and convoys too: only sessions are kept
        return dict(self._lengths)


class Backends:
    def __init__(self) -> None:
        self._simulated: dict[str, bool] = {}  # backend name -> simulated; a server's backends never change

    def unknown(self, listing: str) -> dict[str, str]:
        """A session of each backend of `listing` not known yet: backend -> session."""
        found: dict[str, str] = {}
        for line in listing.splitlines():
            words = line.split(" ", 2)
            if len(words) > 2 and words[1] not in self._simulated:
                found.setdefault(words[1], words[0])
        return found

    async def learn(self, fs: AsyncClient, backend: str, session: str) -> None:
        try:
            words = (await fs.read(f"{session}/backend")).decode(errors="replace").split()
        except ServerError:
            return  # removed meanwhile: another session of the backend tells, later
        self._simulated[backend] = words[1:] == ["simulated"]

    def simulated(self) -> dict[str, bool]:
        return dict(self._simulated)


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
