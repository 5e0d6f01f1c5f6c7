"""The pipes and process group of a command backend's turn (command.py): what it reads, how it ends.

Each turn's process leads its own process group (start_new_session), so a
signal to the group reaches the children it started.
"""

from __future__ import annotations

import codecs
import os
import signal
from collections.abc import Callable

import trio

KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
READ_SIZE = 64 * 1024


async def feed(stdin: trio.abc.SendStream, data: bytes) -> None:
    try:
        await stdin.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the program stopped reading; its exit status tells the story
    finally:
        await stdin.aclose()  # EOF: the prompt is complete


async def pump(stream: trio.abc.ReceiveStream, write: Callable[[str], None]) -> None:
    """Stream stdout as text; the incremental decoder never splits a character."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await stream.receive_some(READ_SIZE):
        if text := decoder.decode(chunk):
            write(text)
    if text := decoder.decode(b"", final=True):
        write(text)


class Tail:
    """The last `keep` bytes of a stream."""

    def __init__(self, keep: int):
        self.keep = keep
        self.data = bytearray()

    async def collect(self, stream: trio.abc.ReceiveStream) -> None:
        while chunk := await stream.receive_some(READ_SIZE):
            self.data += chunk
            del self.data[: -self.keep]

    def keep_text(self, text: str) -> None:
        self.data += text.encode("utf-8", "surrogateescape")
        del self.data[: -self.keep]

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")

    def last_line(self) -> str:
        lines = [line.strip() for line in self.text().splitlines() if line.strip()]
        return lines[-1] if lines else ""


async def reap(process: trio.Process) -> None:
    """Close the pipes and wait for the process, killing its group if it still runs."""
    if process.returncode is None:
        killpg(process, signal.SIGTERM)
        with trio.move_on_after(KILL_GRACE):
            await process.wait()
        killpg(process, signal.SIGKILL)  # also children that ignored SIGTERM
        await process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            await stream.aclose()


def killpg(process: trio.Process, sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)  # start_new_session: the group id is the pid
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is gone already


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
