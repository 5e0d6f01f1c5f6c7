"""Test-only fault injection: ANVILFS_TEST_KILL_AT=POINT makes the server SIGKILL itself at POINT.

Never set it in use. It lets a test crash a real server exactly between two
durable steps, which no timing can hit reliably, and then check what the
next start makes of them (tests/server/test_approval_crashes.py, test_mail_import.py):

    approval-request   a bead's `complete` is saved (pending_approval); its APPROVAL_REQUEST is not recorded yet
    approval-answer    a bead's `approve` or `reject` is saved; the record of its request is not answered yet
    mail-import        mail files of an earlier anvilfs are inserted in the database, not yet committed
    mail-import-move   that import is committed; one of its directories is moved to imported/, not the others
    history-message    a bead's or convoy's file is on disk; its history message is not (storage/objects.py,
                       in the writer thread; tests/server/test_beads_durability.py)
    parse-cache        a start's rows of parsed beads or convoys are half written, not committed
                       (storage/parsed.py; tests/server/test_parse_cache_restarts.py)

The approval points die in the database's writer thread, once everything queued before them is on
disk and before anything queued after (mail/store.py: kill_point), so they stay between the bead's
save and the mail's record however the bead's save reaches the disk.
"""

from __future__ import annotations

import os
import signal

ENV = "ANVILFS_TEST_KILL_AT"


def armed(name: str) -> bool:
    """Whether the test asked to die at this point."""
    return os.environ.get(ENV) == name


def kill_point(name: str) -> None:
    """Die here, at once and without cleanup (as a power cut would), if the test asked for this point."""
    if armed(name):
        os.kill(os.getpid(), signal.SIGKILL)
