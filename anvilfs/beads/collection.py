"""The objects of one kind (beads, convoys): by id, the files they live in, the ids they take.

Board and Convoys keep their rules; this is what they share: reading every
file once at start (a broken one reported, never overwritten, its id never
reused), finding an object with an error that says what to do, and saving a
change: in memory at once (the next verb sees it), on disk and in the history
by the database's writer thread before the request that made it is answered
(storage/objects.py), and undone in memory if the disk refuses it.
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
                 listing: str, undone: Callable[[str, str, T, T | None], None]):
        self.kind = kind
        self.files = files
        self.parse = parse
        self.listing = listing  # where a user sees them all: `beads/list`
        self.undone = undone  # (id, why, was, now): a change the disk refused was taken back in memory
        self.items: dict[str, T] = {}
        self.broken: dict[str, str] = {}  # id -> why its file cannot be used
        self._ids = IdMaker(kind)
        self._saving: dict[str, _Saving] = {}  # id -> its writes on their way to disk

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
        """In memory now; its file and history message queued for the disk (a file a person broke: refused,
        nothing changed). A write the disk refuses is taken back once the writes queued after it are done."""
        obj.updated = timestamp()
        if self.files is None:
            self.items[obj.id] = obj
            return
        saving = self._saving.setdefault(obj.id, _Saving(self.items.get(obj.id)))
        saving.writes += 1
        previous = self.items.get(obj.id)
        self.items[obj.id] = obj  # first: a write that settles at once finds it
        try:
            self.files.write(obj.id, obj.to_toml(), new=new, message=message,
                             settled=lambda error: self._settled(obj, error))
        except OSError as exc:
            self._forget(obj.id, previous)
            raise AnvilError(f"cannot save {self.kind} {obj.id}: {exc.strerror or exc}; nothing was changed") from None

    def _forget(self, object_id: str, previous) -> None:
        """A write refused before it was queued."""
        saving = self._saving[object_id]
        saving.writes -= 1
        if not saving.writes:
            del self._saving[object_id]
        _put_back(self.items, object_id, previous)

    def _settled(self, obj, error: OSError | None) -> None:
        """Writes settle in the order they were queued: once the last is done, memory holds what disk does."""
        saving = self._saving[obj.id]
        saving.writes -= 1
        if error is None:
            saving.on_disk = obj
        else:
            saving.refused = f"cannot save {self.kind} {obj.id}: {error.strerror or error}"
        if saving.writes:
            return
        del self._saving[obj.id]
        was = self.items.get(obj.id)
        if saving.refused and was is not saving.on_disk:
            _put_back(self.items, obj.id, saving.on_disk)
            self.undone(obj.id, saving.refused, was, saving.on_disk)


def _put_back(items: dict, object_id: str, obj) -> None:
    if obj is None:
        items.pop(object_id, None)
    else:
        items[object_id] = obj


class _Saving:
    """An object's writes on their way to disk: how many, the last version on disk, and why one failed."""

    __slots__ = ("on_disk", "writes", "refused")

    def __init__(self, on_disk) -> None:
        self.on_disk = on_disk
        self.writes = 0
        self.refused = ""
