"""Test-only: SIGKILL this process at its Kth crash point, so crash tests are reproducible.

    ANVILFS_CONDUCTOR_CRASH_AT=K anvilfs-conductor run ...

Crash points are each durable record (right after it is on disk), the
import of a record of the format before (committed, its files not yet
removed), and the two moments of a prompt's send that matter (its bytes
written, its Tclunk sent but not answered). With the variable set, each point passed is a line
on stderr (`crash point N (what)`), and the one it dies at says SIGKILL, so
a test can count how far a process got. Unset, a point costs one comparison.
"""

from __future__ import annotations

import os
import signal
import sys
import time

_target = int(os.environ.get("ANVILFS_CONDUCTOR_CRASH_AT", "0") or 0)
_count = 0
_held = float(os.environ.get("ANVILFS_CONDUCTOR_HOLD_BEGINS", "0") or 0)  # seconds


def hold_begin(what: str) -> None:
    """Test-only: ANVILFS_CONDUCTOR_HOLD_BEGINS=S holds each step's begin record S seconds before its
    commit (in the database's writer thread), so a test can kill the conductor after a prompt went and
    before its record did. Unset, it costs one comparison."""
    if _held and what.startswith("begin "):
        time.sleep(_held)


def armed() -> bool:
    """Whether the crash points count (a crash test): the prompt's send is then cut in two (ninetree.py)."""
    return bool(_target)


def point(label: str) -> None:
    global _count
    if not _target:
        return
    _count += 1
    dying = _count == _target
    sys.stderr.write(f"conductor: crash point {_count} ({label}){': SIGKILL' if dying else ''}\n")
    sys.stderr.flush()
    if dying:
        os.kill(os.getpid(), signal.SIGKILL)
