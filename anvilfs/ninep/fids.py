"""The fid and tag tables of one connection, with the generic checks 9P asks for."""

from __future__ import annotations

import errno
from typing import Generic, TypeVar

from .consts import NOFID
from .errors import RequestError

T = TypeVar("T")


class FidTable(Generic[T]):
    """The fids a client holds, each bound to a server-side object."""

    __slots__ = ("_fids", "limit")

    def __init__(self, limit: int):
        self._fids: dict[int, T] = {}
        self.limit = limit

    def __len__(self) -> int:
        return len(self._fids)

    @property
    def by_number(self) -> dict[int, T]:
        """The table itself, for a caller that looks fids up and binds them without a call for each (the
        server's hot handlers: a fid it does not find it leaves to `get` to refuse)."""
        return self._fids

    def get(self, fid: int) -> T:
        try:
            return self._fids[fid]
        except KeyError:
            raise RequestError(f"unknown fid {fid}", errno.EBADF) from None

    def check_free(self, fid: int) -> None:
        if fid == NOFID:
            raise RequestError("fid NOFID cannot name a file", errno.EBADF)
        if fid in self._fids:
            raise RequestError(f"fid {fid} already in use", errno.EBADF)
        if len(self._fids) >= self.limit:
            raise RequestError(f"too many fids: at most {self.limit} per connection; clunk some", errno.EMFILE)

    def add(self, fid: int, value: T) -> None:
        self.check_free(fid)
        self._fids[fid] = value

    def bind(self, fid: int, value: T) -> None:
        """add, for a fid that check_free has passed since (nothing else can have taken it)."""
        self._fids[fid] = value

    def replace(self, fid: int, value: T) -> None:
        """Bind a fid that exists already (a walk with newfid == fid)."""
        self.get(fid)
        self._fids[fid] = value

    def pop(self, fid: int) -> T:
        value = self.get(fid)
        del self._fids[fid]
        return value

    def clear(self) -> list[T]:
        values = list(self._fids.values())
        self._fids.clear()
        return values


class TagTable(dict[int, T]):
    """Requests in flight, by tag. A tag may not be reused while in flight.

    A dict, so that the membership test every request makes is the dict's own.
    """

    __slots__ = ()

    def begin(self, tag: int, value: T) -> None:
        if tag in self:
            raise RequestError(f"tag {tag} is already in flight", errno.EINVAL)
        self[tag] = value

    def end(self, tag: int) -> T | None:
        return self.pop(tag, None)

    def values(self) -> list[T]:
        """A copy: cancelling what is in flight may end some of it."""
        return list(super().values())
