"""`anvilfs web` yields the CPU to the server and its agents: it runs `--nice` (10) nicer than its shell.

With 10,000 beads, the views it reads right after each change took a core from the server and its other
clients on a 2-core machine (benchmarks/reads.py, issue 32 item 6); a page can wait a few milliseconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from web_drive import web_process

from harness.server import REPO_ROOT, AnvilServer


def test_the_web_runs_ten_nicer_than_its_shell_unless_told(srv: AnvilServer, tmp_path: Path) -> None:
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    with web_process(srv, tmp_path / "web.log") as web:
        assert os.getpriority(os.PRIO_PROCESS, web.proc.pid) == min(mine + 10, 19)
    with web_process(srv, tmp_path / "web0.log", "--nice", "0") as web:
        assert os.getpriority(os.PRIO_PROCESS, web.proc.pid) == mine


def test_a_negative_nice_is_refused_before_anything_runs(srv: AnvilServer) -> None:
    result = subprocess.run([sys.executable, "-m", "anvilfs", "web", "--nice", "-5"], env=srv.env(), cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result
    assert "--nice -5: give 0 or more" in result.stderr, result.stderr
