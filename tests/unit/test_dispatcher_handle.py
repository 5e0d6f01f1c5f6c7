"""Dispatcher.handle (tests and tools hand it messages): a request of no handler in the dialect is refused
for what is wrong, never as an internal error (a review found a KeyError there)."""

from __future__ import annotations

from anvilfs.ninep import messages as m
from anvilfs.server import Dispatcher, Limits
from anvilfs.tree import Directory


def _dispatcher() -> Dispatcher:
    return Dispatcher(Directory("/", "/", []), Limits())


def test_a_dotl_request_before_any_version_is_refused_for_the_missing_version() -> None:
    reply = _dispatcher().handle(m.Tlopen(tag=1, fid=0, flags=0))
    assert isinstance(reply, m.Rerror), reply
    assert "internal error" not in reply.ename and "version" in reply.ename, reply


def test_a_dotl_request_in_a_plain_9p2000_session_is_not_supported() -> None:
    dispatcher = _dispatcher()
    dispatcher.handle(m.Tversion(tag=0xFFFF, msize=8192, version="9P2000"))
    reply = dispatcher.handle(m.Tlopen(tag=1, fid=0, flags=0))
    assert isinstance(reply, m.Rerror), reply
    assert "internal error" not in reply.ename and "Tlopen" in reply.ename, reply
