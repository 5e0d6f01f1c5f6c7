"""Waiting on processes the test did not start itself (an agent's, a tmux pane's), and stopping those it did."""

from __future__ import annotations

import os
import subprocess

import trio

from .deadlines import WAIT, within


async def wait_gone(pid: int, what: str = "", *, timeout: float = WAIT) -> None:
    """Return when process ``pid`` has ended (its pidfd turns readable); fail after ``timeout``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        with within(timeout, f"process {pid} {what}".rstrip() + " to end"):
            await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def stop(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``grace`` seconds; waits for it either way."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace)
