"""A real server for the review-cycle scripts (scripts/review-cycle.sh and .rc), with fake agents.

    with review_server() as (srv, work):
        r = run_script([bash, SCRIPT_SH, "3"], srv, work)
        assert prompts(srv.run_cli("read", "agent/r1/log").stdout) == [...]

The configuration has two command backends, `reviewer` and `developer`, each running
tests/fakes/review_agent.py (an ISSUE in round 1, NO ISSUES from round 2), and the roles
`reviewer` and `developer`, so the scripts make their sessions with a role. The scripts get
BACKEND=reviewer DEV_BACKEND=developer CWD=WORK, and the venv's `anvilfs` first on PATH.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from .fakes import FAKES
from .server import REPO_ROOT, AnvilServer, start_server

REVIEW_AGENT = FAKES / "review_agent.py"
SCRIPT_SH = REPO_ROOT / "scripts" / "review-cycle.sh"
SCRIPT_RC = REPO_ROOT / "scripts" / "review-cycle.rc"
REVIEWERS = ("r1", "r2", "r3", "r4", "r5")
DEVELOPER = "dev"
# a transcript record's first line: --- prompt 1 from glenda at TIME (docs/using.md, "The transcript")
_RECORD = re.compile(r"^--- (prompt|answer|failed|interrupted|ended) \d+ .*$", re.MULTILINE)


def review_config(base: Path) -> Path:
    """config.toml (and roles/ beside it) in ``base``: the two fake backends."""
    # "broken" runs the agent without its role: it exits 2 with its usage, a failed turn
    argv = {role: f'["{sys.executable}", "{REVIEW_AGENT}"' + (f', "{role}"]' if role != "broken" else "]")
            for role in ("reviewer", "developer", "broken")}
    tables = "".join(f'[backends.{role}]\nkind = "command"\nargv = {line}\n' for role, line in argv.items())
    (base / "roles").mkdir()
    (base / "roles" / "reviewer.md").write_text("You review code.\n")  # no ISSUE: the fake echoes a first line
    (base / "roles" / "developer.md").write_text("You fix what the reviewers found.\n")
    config = base / "config.toml"
    config.write_text(tables)
    return config


@contextlib.contextmanager
def review_server() -> Iterator[tuple[AnvilServer, Path]]:
    """A server with the fake review backends, and an empty work directory for the sessions' cwd."""
    base = Path(tempfile.mkdtemp(prefix="anvrv.", dir="/tmp"))
    try:
        (base / "work").mkdir()
        srv = start_server(base, extra_args=["--config", str(review_config(base))])
        try:
            yield srv, base / "work"
        finally:
            srv.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def script_env(srv: AnvilServer, work: Path) -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "anvilfs").exists(), f"no anvilfs command beside {sys.executable}: run scripts/venv test"
    return srv.env() | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "BACKEND": "reviewer",
                        "DEV_BACKEND": "developer", "CWD": str(work)}


def run_script(argv: Sequence[str], srv: AnvilServer, work: Path, *, env: dict[str, str] | None = None,
               timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """Run a review-cycle script to its end (a deadline of ``timeout`` seconds); ``env`` overrides."""
    return subprocess.run(list(argv), env=script_env(srv, work) | (env or {}), cwd=work, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def prompts(log: str) -> list[str]:
    """The text of each prompt record in a session's `log`, in order."""
    heads = list(_RECORD.finditer(log))
    ends = [h.start() for h in heads[1:]] + [len(log)]
    return [log[h.end() + 1:end].rstrip("\n") for h, end in zip(heads, ends) if h.group(1) == "prompt"]


def reviewer_prompt(number: int, work: Path) -> str:
    return (f"round {number}: review the code in {work} (the developer's last answer is in agent/{DEVELOPER}/out)\n"
            "Write one line ISSUE: WHAT per problem, or NO ISSUES.")
