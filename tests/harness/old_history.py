"""A state directory's history as anvilfs left it up to 0dec9af (before STATE/anvilfs.db): for the importer's tests.

That code's GitHistory.record appended one JSON array [record id, message] a line to STATE/history.journal
(the id "<boot>.<n>", the message one line); a commit renamed the journal to history.committing, committed
it with its last record id as the trailer "Anvilfs-Batch: <id>", and removed it. Checked against that code:
`git worktree add /tmp/old 0dec9af` and GitHistory(PrivateDir(state)).record(...) there writes the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from anvilfs.journal import one_line

JOURNAL = "history.journal"
COMMITTING = "history.committing"


def old_records(boot: str, messages: list[str], first: int = 1) -> bytes:
    return b"".join((json.dumps([f"{boot}.{first + i}", one_line(m)]) + "\n").encode() for i, m in enumerate(messages))


def write_old(state: Path, name: str, data: bytes) -> None:
    (state / name).write_bytes(data)
    (state / name).chmod(0o600)

