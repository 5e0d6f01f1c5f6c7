"""The synthetic tree: directories and files, and their stable identities.

A node's qid path is a hash of its key (e.g. "session/bot1/out"), so a file
keeps its identity across walks, connections and server restarts, and needs
no allocation table. Nodes know nothing of 9P: the server turns their
name, key, mode and kind into qids and stat records.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import NotPermitted, PermissionDenied

if TYPE_CHECKING:
    from ..waitable import Later


# Modes are the owner's alone (SPEC §4): a mount shared with other local
# users must not let them read transcripts or write prompts.
READ_ONLY = 0o400
WRITE_ONLY = 0o200
READ_WRITE = 0o600
DIRECTORY = 0o500  # entries come and go by ctl commands, not create/remove
CHANGEABLE_DIRECTORY = 0o700  # for a directory whose create/remove work


def qid_path(key: str) -> int:
    """A stable 64-bit identity for a node key."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who opened a file: the user name the client attached as."""

    uname: str


class Node:
    """A file or directory of the tree.

    ``stamp``, for a file whose content changes, gives (a version that moves
    with each change, the epoch second of the last): the server's qid.version
    and mtime, so `ls -lt`, `find -newer` and caching clients see it move.
    """

    is_dir = False
    __slots__ = ("name", "key", "path", "mode", "mtime", "stamp", "record", "entry")

    def __init__(self, name: str, key: str, mode: int):
        self.name = name
        self.key = key
        self.path = qid_path(key)
        self.mode = mode
        self.mtime = int(time.time())
        self.stamp: Callable[[], tuple[int, int]] | None = None
        self.record: tuple | None = None  # the server's: the stat record last encoded for it, and what it showed
        self.entry: tuple | None = None  # the server's: its Treaddir entry's parts, likewise

    def size(self) -> int:
        """The length a stat reports (SPEC §4): 0, unless a file kind says otherwise."""
        return 0

    @property
    def readable(self) -> bool:
        return bool(self.mode & 0o400)

    @property
    def writable(self) -> bool:
        return bool(self.mode & 0o200)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.key}>"


class Directory(Node):
    """A directory whose entries are fixed files plus, optionally, computed ones.

    ``more`` returns the computed entries (e.g. one directory per session);
    ``find`` looks one of them up by name without listing them all.
    ``remove`` makes entries removable (Tremove, Tunlinkat): it is handed the
    entry and the caller, and refuses by raising; such a directory is 0700.
    ``fixed`` may be a function that makes the entries: it is called the first
    time they are needed, so that listing 10,000 beads makes 10,000 directories,
    not their 130,000 files; ``forget_entries`` drops them again (made anew
    when next needed), and ``on_made`` hears of each making.
    """

    is_dir = True
    __slots__ = ("_made", "_make", "_more", "_find", "_remove", "on_made", "listed")

    def __init__(
        self,
        name: str,
        key: str,
        fixed: Iterable[Node] | Callable[[], Iterable[Node]] = (),
        *,
        more: Callable[[], Iterable[Node]] | None = None,
        find: Callable[[str], Node | None] | None = None,
        remove: Callable[[Node, Caller], None] | None = None,
        mode: int | None = None,
    ):
        super().__init__(name, key, mode if mode is not None else CHANGEABLE_DIRECTORY if remove else DIRECTORY)
        self._make = fixed if callable(fixed) else None
        self._made = None if callable(fixed) else {node.name: node for node in fixed}
        self._more = more
        self._find = find
        self._remove = remove
        self.on_made: Callable[[Directory], None] | None = None
        self.listed: dict | None = None  # the server's: its last listing's nodes and their records, by kind

    @property
    def _fixed(self) -> dict[str, Node]:
        if self._made is None:
            self._made = {node.name: node for node in self._make()}
            if self.on_made is not None:
                self.on_made(self)
        return self._made

    def build_entries(self) -> None:
        """Make the fixed entries now, if a function makes them (a start builds ahead what clients walk to)."""
        self._fixed

    def forget_entries(self) -> None:
        """Drop the fixed entries a function made; they are made again when next needed. An open fid keeps
        its file (the file reads the domain, not the directory), and a new one has the same qid."""
        if self._make is not None:
            self._made = None
            self.listed = None  # it holds the entries too

    @property
    def entries_made(self) -> bool:
        return self._made is not None

    def fixed_names(self) -> frozenset[str]:
        """The names of the entries given at construction (not those `more` adds)."""
        return frozenset(self._fixed)

    def lookup(self, name: str) -> Node | None:
        node = (self._made if self._made is not None else self._fixed).get(name)  # every walk: no property call
        if node is None and self._find is not None:
            node = self._find(name)
        return node

    def remove_entry(self, node: Node, caller: Caller) -> None:
        """Remove one entry of this directory, or say why it cannot be."""
        if self._remove is None or node.name in self._fixed:
            raise NotPermitted(f"{node.name} cannot be removed" + (f" from {self.name}" if self._remove else ""))
        self._remove(node, caller)

    def children(self) -> list[Node]:
        nodes = list(self._fixed.values())
        if self._more is not None:
            nodes.extend(self._more())
        return nodes


class Handle:
    """One open of a file. The server calls these; a file kind overrides them.

    Reads that can block set ``blocking``: the server first asks
    ``ready(offset)`` and, only if not, runs ``wait_ready(offset)`` in a task it can cancel (flush).
    ``read`` itself never blocks, so the data is taken only when the reply is
    about to be sent ("look first, commit after").
    """

    blocking = False

    def ready(self, offset: int) -> bool:
        return True

    async def wait_ready(self, offset: int) -> None:  # pragma: no cover - only blocking handles
        return None

    def read(self, offset: int, count: int) -> bytes:
        raise PermissionDenied("file is not readable")

    def write(self, offset: int, data: bytes) -> int:
        raise PermissionDenied("file is not writable")

    def size(self) -> int | None:
        """The length of what this open reads, if it holds it (a snapshot); None: the file's size()."""
        return None

    def truncate(self) -> None:
        """O_TRUNC or a length-0 wstat/setattr: accepted and ignored (SPEC §4)."""

    def held(self) -> int:
        """Bytes this open holds for its clunk (a prompt being written); the server bounds their sum."""
        return 0

    def adds(self, offset: int, data: bytes) -> int:
        """How many bytes a write would add to held() (checked against the limit before it is made)."""
        return 0

    def clunk(self) -> Later | None:
        """The client is done with this open: act on what it wrote; a Later if the answer must wait for it."""

    def abandon(self) -> None:
        """The connection went away without a clunk; by default, same as clunk."""
        self.clunk()


class File(Node):
    """A file; its kind decides what an open of it does."""

    __slots__ = ()

    def open(self, caller: Caller) -> Handle:
        raise NotImplementedError
