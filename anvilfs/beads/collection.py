"""The objects of one kind (beads, convoys): by id, the files they live in, the ids they take.

Board and Convoys keep their rules; this is what they share: reading every
file once at start (a broken one reported, never overwritten, its id never
reused), finding an object with an error that says what to do, and saving a
change to disk and to history before memory changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from ..errors import AnvilError, Busy, NotFound
from ..journal import timestamp
from ..storage import TomlObjects
from .ids import IdMaker
from .model import BadFile

T = TypeVar("T")


class Collection(Generic[T]):
    def __init__(self, kind: str, files: TomlObjects | None, parse: Callable[[dict, str], T], *,
                 history: Callable[[str], None], listing: str):
        self.kind = kind
        self.files = files
        self.parse = parse
        self.history = history
        self.listing = listing  # where a user sees them all: `beads/list`
        self.items: dict[str, T] = {}
        self.broken: dict[str, str] = {}  # id -> why its file cannot be used
        self._ids = IdMaker(kind)

    def load(self) -> list[str]:
        """Read every file; a line for each that cannot be used (reported, never fixed silently)."""
        if self.files is None:
            return []
        tables, broken = self.files.load_all()
        for object_id, table in tables.items():
            try:
                self.items[object_id] = self.parse(table, object_id)
            except BadFile as exc:
                broken[object_id] = str(exc)
        self.broken = broken
        for object_id in [*tables, *broken]:
            self._ids.seen(object_id)
        return [f"{self.kind} {i}: {self.files.path(i)} cannot be used: {why}; fix the file by hand"
                for i, why in broken.items()]

    def get(self, object_id: str) -> T:
        found = self.items.get(object_id)
        if found is None:
            if object_id in self.broken:
                raise Busy(f"{self.kind} {object_id}'s file is broken ({self.broken[object_id]}); fix it by hand "
                           "and restart the server")
            raise NotFound(f"no {self.kind} {object_id!r}; `{self.listing}` shows the {self.kind}s there are")
        return found

    def new_id(self, title: str) -> str:
        """An id read from the title, never one taken, not even by a broken file."""
        return self._ids.next(title, lambda i: i in self.items or i in self.broken)

    def save(self, obj, message: str, *, new: bool = False) -> None:
        """On disk (atomic, fsynced) and recorded for history, then in memory; a refused write changes nothing."""
        obj.updated = timestamp()
        if self.files is not None:
            try:
                self.files.write(obj.id, obj.to_toml(), new=new)
            except OSError as exc:
                raise AnvilError(f"cannot save {self.kind} {obj.id}: {exc.strerror or exc}; nothing was changed") from None
            self.history(message)
        self.items[obj.id] = obj
