"""A state directory left by anvilfs up to 0dec9af (no STATE/anvilfs.db; history messages pending in
STATE/history.journal) comes up with them: a real server imports the journal once, commits, and removes it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from harness.git_history import git, subjects
from harness.old_history import JOURNAL, old_records, write_old
from harness.server import start_server


def test_a_state_with_an_old_history_journal_comes_up_with_its_messages_committed():
    base = Path(tempfile.mkdtemp(prefix="anvi.", dir="/tmp"))
    state, srv = base / "state", None
    try:
        srv = start_server(base, trace=False)
        result = srv.run_cli("write", "agent/beads/ctl", 'new "Old task" worker "d"')
        assert result.returncode == 0, result.stderr
        bead = srv.run_cli("read", "agent/beads/list").stdout.split()[0]
        srv.stop()
        # what the old server left when it was killed after a change and before its commit: the file changed,
        # the message in its journal, and no database
        for path in state.glob("anvilfs.db*"):
            path.unlink()
        path = state / "beads" / f"{bead}.toml"
        path.write_text(path.read_text().replace('description = "d"', 'description = "changed before the upgrade"'))
        write_old(state, JOURNAL, old_records("0ld", [f"Updated description: {bead}"]))
        srv = start_server(base, trace=False, log_name="upgraded.trace")
        assert srv.run_cli("read", f"agent/beads/{bead}/description").stdout == "changed before the upgrade\n"
        srv.stop()  # a clean stop commits what is pending
        assert subjects(state) == [f"Updated description: {bead}", f"Created: Old task ({bead}, role worker)"]
        assert git(state, "status", "--porcelain", "--", "beads") == ""
        assert not (state / JOURNAL).exists()
    finally:
        if srv is not None:
            srv.stop()
        shutil.rmtree(base, ignore_errors=True)
