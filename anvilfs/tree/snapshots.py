"""Snapshots of computed files: shared while their content is the same, and budgeted.

A read at offset 0 of a computed file takes a snapshot that later offsets
continue (SPEC §4). Three hundred readers of an unchanged 1 MiB `log` share
one snapshot: the file keeps the snapshots its readers hold, by content and
weakly (each goes when its last reader does), and hands out the one that
has the content just rendered. What one connection's open files hold is counted in a SnapshotBudget,
each distinct snapshot once, so a client cannot pin without limit by
re-reading a file that keeps changing.
"""

from __future__ import annotations

import errno
import weakref
from collections.abc import Callable

from ..errors import LimitExceeded


class SnapshotLimit(LimitExceeded):
    errno = errno.ENOMEM  # the limit guards the server's memory; 9pfuse maps "memory" to ENOMEM too


class Snapshot:
    """The bytes of a file at one moment. Compared by identity: one object per distinct content."""

    __slots__ = ("data", "__weakref__")

    def __init__(self, data: bytes):
        self.data = data


class SnapshotSource:
    """Renders a file's text and gives back a snapshot still held with that same text."""

    __slots__ = ("_render", "_live")

    def __init__(self, render: Callable[[], str]):
        self._render = render
        # content -> a weak reference to the snapshot holding it: what a WeakValueDictionary does,
        # with the reference made and followed in C (its own methods are Python, six calls a
        # snapshot, and every open of a file that nobody holds open makes one)
        self._live: dict[bytes, _Ref] = {}

    def take(self) -> Snapshot:
        data = self._render().encode("utf-8")
        ref = self._live.get(data)
        snapshot = ref() if ref is not None else None
        if snapshot is None:
            snapshot = Snapshot(data)
            ref = self._live[data] = _Ref(snapshot, self._forget)
            ref.data = data
        return snapshot

    def _forget(self, ref: _Ref) -> None:
        """The snapshot's last holder let go: its entry goes, unless a newer snapshot has taken it."""
        if self._live.get(ref.data) is ref:
            del self._live[ref.data]


class _Ref(weakref.ref):
    """A weak reference that knows its content, so that its entry can go when it dies."""

    __slots__ = ("data",)


class SnapshotBudget:
    """The snapshots one connection's open files hold, each distinct one counted once.

    With no limit nothing is counted (and nothing is kept alive by the count).
    """

    def __init__(self, limit: int | None):
        self.limit = limit
        self.held_bytes = 0
        self._holders: dict[Snapshot, int] = {}  # snapshot -> how many open files hold it

    @property
    def held(self) -> int:
        """Distinct snapshots held."""
        return len(self._holders)

    def swap(self, old: Snapshot | None, new: Snapshot) -> None:
        """One open file lets go of `old` and holds `new`; refused (nothing changes) past the limit."""
        if new is old or self.limit is None:
            return
        after = self.held_bytes + (0 if new in self._holders else len(new.data))
        if old is not None and self._holders.get(old) == 1:
            after -= len(old.data)
        if after > self.limit:
            raise SnapshotLimit(
                f"too much memory held by open files: at most {_size(self.limit)} of snapshots per connection; "
                "close some open files")
        self._holders[new] = self._holders.get(new, 0) + 1
        self.held_bytes += 0 if self._holders[new] > 1 else len(new.data)
        self.release(old)

    def release(self, snapshot: Snapshot | None) -> None:
        if snapshot is None or self.limit is None:
            return
        left = self._holders[snapshot] - 1
        if left:
            self._holders[snapshot] = left
        else:
            del self._holders[snapshot]
            self.held_bytes -= len(snapshot.data)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n and n % (1 << 20) == 0 else f"{n} bytes"


UNLIMITED = SnapshotBudget(None)  # for handles read outside a connection (tests, tools)
