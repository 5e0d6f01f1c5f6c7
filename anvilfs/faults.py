"""Test-only fault injection: ANVILFS_TEST_KILL_AT=POINT makes the server SIGKILL itself at POINT.

Never set it in use. It lets a test crash a real server exactly between two
durable steps, which no timing can hit reliably, and then check what the
next start makes of them (tests/server/test_approval_crashes.py,
tests/server/test_beads_durability.py):

    approval-request   a bead's `complete` is saved (pending_approval); its APPROVAL_REQUEST is not recorded yet
    approval-answer    a bead's `approve` or `reject` is saved; the record of its request is not answered yet
    history-message    a bead's or convoy's file is on disk; its history message is not (storage/objects.py)

A point in the event loop first lets the database's writer thread finish
what was queued before it (`flush_first`): "saved" means on disk there,
as it did when the loop wrote files itself. A point in the writer thread
dies at once: what came before it is on disk already.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

ENV = "ANVILFS_TEST_KILL_AT"

_flush: Callable[[], None] | None = None


def flush_first(flush: Callable[[], None]) -> None:
    """What a kill point in the event loop runs first (the database's flush), when a test asked for a point."""
    global _flush
    if os.environ.get(ENV):
        _flush = flush


def kill_point(name: str) -> None:
    """Die here, at once and without cleanup (as a power cut would), if the test asked for this point."""
    if os.environ.get(ENV) == name:
        if _flush is not None and threading.current_thread() is threading.main_thread():
            _flush()
        os.kill(os.getpid(), signal.SIGKILL)
