"""Turning a connection away in words its client can read.

A client that is simply hung up on sees EOF on its Tversion and cannot tell
why. So the refused connection's Tversion is read and answered with an error
in the dialect it asked for: Linux takes any error reply to a 9P2000.L
Tversion as Rlerror, so that dialect gets the errno alone (a 9P2000 Rerror
string there would be read as a garbage errno); the others get Rerror with
the text (and, in 9P2000.u, the errno). Then the connection is closed.

What a refused client may cost is bounded: a few seconds and one small frame.
"""

from __future__ import annotations

import trio

from ..ninep import Dialect, FrameBuffer, NinePError, decode, encode, negotiate
from ..ninep import messages as m

REFUSAL_SECONDS = 5.0  # how long a refused client has to send its Tversion (and read the answer)
_TVERSION_MAX = 512  # bytes: a Tversion is 13 bytes plus its version string


async def refuse(stream: trio.abc.Stream, text: str, code: int, *, seconds: float = REFUSAL_SECONDS) -> None:
    """Answer the client's Tversion with an error (text, errno `code`), then close the stream."""
    try:
        with trio.move_on_after(seconds):
            tversion = await _receive_tversion(stream)
            if tversion is not None:
                await stream.send_all(_refusal(tversion, text, code))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the client left first: nothing more to tell it
    finally:
        await trio.aclose_forcefully(stream)


async def _receive_tversion(stream: trio.abc.Stream) -> m.Tversion | None:
    """The first frame if it is a Tversion; None if it is something else or not a frame."""
    frames = FrameBuffer(_TVERSION_MAX)
    try:
        while (frame := frames.next_frame()) is None:
            data = await stream.receive_some(_TVERSION_MAX)
            if not data:
                return None
            frames.feed(data)
        msg = decode(frame, Dialect.P2000)
    except NinePError:
        return None
    return msg if isinstance(msg, m.Tversion) else None


def _refusal(tversion: m.Tversion, text: str, code: int) -> bytes:
    dialect = negotiate(tversion.version) or Dialect.P2000
    if dialect is Dialect.P2000L:
        return encode(m.Rlerror(tag=tversion.tag, ecode=code), dialect)
    return encode(m.Rerror(tag=tversion.tag, ename=text, errno=code), dialect)
