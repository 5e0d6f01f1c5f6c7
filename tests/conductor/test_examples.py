"""Every workflow in conductor/examples runs to its end with `--backend sim`, from what a clone holds.

Each example is copied with the files git tracks beside it (nothing a run left in this checkout, no
untracked folder) into a git repository of its own, as a clone has them in one (the developers of
review.toml and lanes.toml work in worktrees of it), and run by a real conductor against a real
server whose config is empty: the built-in `sim` backend answers every session. It must end `done`
with stdout its one line, every session it made on sim, the repository as it was (sim edits nothing:
its beads complete as no-change, and nothing is merged).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conductor.loading import load
from harness.server import REPO_ROOT, anvil_server
from harness.worktrees import git, status
from review_cycle import TIMEOUT, run_conductor

EXAMPLES = REPO_ROOT / "conductor" / "examples"


def shipped() -> list[str]:
    """The files of conductor/examples that a clone has (git's index), relative to it."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=EXAMPLES, capture_output=True, text=True,
                            check=True, timeout=30)
    return [name for name in listed.stdout.split("\0") if name]


def fresh_copy(base: Path) -> Path:
    copy = base / "examples"
    for name in shipped():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(EXAMPLES / name, copy / name)
    git(copy, "init", "-q", "--initial-branch=main")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "the examples, as a clone has them")
    return copy


@pytest.mark.parametrize("example", sorted(n for n in shipped() if n.endswith(".toml") and "/" not in n))
def test_the_example_runs_to_its_end_on_the_sim_backend(example: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    path = fresh_copy(base) / example
    workflow = load(path).workflow
    with anvil_server() as srv:
        done = run_conductor(srv, path, base / "state", "--backend", "sim", timeout=120)
        why = f"{done.stdout}\n{done.stderr}\n{srv.trace_tail(40)}"
        assert (done.returncode, done.stdout) == (0, f"done: all steps of {workflow.name} done\n"), why
        with srv.connect("test", timeout=TIMEOUT) as client:
            backends = {name: client.read_file(f"{name}/backend").decode() for name in workflow.sessions}
            worktrees = {name: client.read_file(f"{name}/worktree").decode() for name in workflow.sessions}
    assert backends == dict.fromkeys(workflow.sessions, "sim simulated\n"), why
    for name, spec in workflow.sessions.items():
        assert bool(worktrees[name]) == spec.worktree, (name, worktrees[name], why)
    if any(spec.worktree for spec in workflow.sessions.values()):
        assert "'s branch: no-change: " in done.stderr, why  # its merge step saw nothing to merge
    assert status(path.parent) == "" and git(path.parent, "rev-list", "--count", "main") == "1", why


def test_the_review_example_goes_round_once_on_sim_before_it_is_clean() -> None:
    """Its review prompt carries sim:issues=1 (docs/backends.md): on sim each reviewer reports an ISSUE in
    round 1 only, so the developer fixes once and round 2 is clean; a loop, not one round and out."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    path = fresh_copy(base) / "review.toml"
    with anvil_server() as srv:
        done = run_conductor(srv, path, base / "state", "--backend", "sim", timeout=120)
        why = f"{done.stdout}\n{done.stderr}"
        assert done.returncode == 0, why
        assert "clean@1: none of ['r1', 'r2', 'r3', 'r4', 'r5'] contains 'ISSUE:': False" in done.stderr, why
        assert "clean@2: none of ['r1', 'r2', 'r3', 'r4', 'r5'] contains 'ISSUE:': True" in done.stderr, why
        with srv.connect("test", timeout=TIMEOUT) as client:
            out = client.read_file("r1/out").decode()
            fixes = client.read_file("dev/log").decode().count("\nFix round ")
    assert out.startswith("[simulated] r1, turn 2") and "NO ISSUES (simulated" in out and fixes == 1, (out, why)
