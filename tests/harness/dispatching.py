"""Driving a Dispatcher in-process, as the connection does, with each reply as a message."""

from __future__ import annotations

from anvilfs.ninep import Dialect, codec_for
from anvilfs.ninep import messages as m
from anvilfs.server import Dispatcher


def handle(dispatcher: Dispatcher, msg: m.Message):
    """dispatcher.handle(msg), with a reply it encoded already (the replies every read of a file
    makes: server/dispatch.py) decoded into its message; Blocked and Deferred as they come."""
    reply = dispatcher.handle(msg)
    if type(reply) is bytes:
        return codec_for(dispatcher.dialect or Dialect.P2000).decode(reply)
    return reply
