"""A developer session in a git worktree, its bead claimed, completed and merged, by a real conductor against a
real server with a real repository (SPEC §6a, conductor/README.md "Worktrees and the merge step").

The developer is a sim session (it writes no file): the test plays its edit. A gate of the workflow holds on a
fifo after the claim, so the test writes into the developer's worktree between claim and complete, as an
agent would; then the conductor completes the bead (anvilfs commits the edit) and its merge step waits for the
server's queue to merge the branch into main.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.server import anvil_server
from harness.worktrees import commit_file, git, make_repo, status, write
from review_cycle import RUN, TIMEOUT, conductor_argv, prompts, run_conductor
from sim_flow import Watched, session_file

pytestmark = pytest.mark.timeout(240)


def head(name: str, repo: str, title: str) -> str:
    """Workflow `name`: session dev (sim) in a worktree of `repo`, and a first step making bead `title`."""
    return f'''name = "{name}"
[sessions.dev]
backend = "sim"
cwd = "{repo}"
worktree = true

[[steps]]
id = "feature"
kind = "bead"
action = "new"
title = "{title}"
role = "developer"
'''


def workflow(base: Path, repo: str, fifo: Path, *, merge: str = "", complete: str = "") -> Path:
    """dev (sim, in a worktree of `repo`) claims a bead, is prompted, the test edits (the gate holds on the fifo
    meanwhile), the bead is completed and merged."""
    path = base / "team.toml"
    path.write_text(head("team", repo, "Add the feature") + f'''description = "Write feature.txt."

[[steps]]
id = "take"
kind = "bead"
action = "claim"
bead = "feature"
session = "dev"

[[steps]]
id = "ask"
kind = "prompt"
to = ["dev"]
text = "Work in {{worktree.dev}} on {{bead.feature.title}}."

[[steps]]
id = "answered"
kind = "wait"
sessions = ["dev"]

[[steps]]
id = "edit"
kind = "gate"
run = ["sh", "-c", "read x < {fifo}"]

[[steps]]
id = "done"
kind = "bead"
action = "complete"
bead = "feature"
result = "{{out.dev}}"
{complete}
[[steps]]
id = "merged"
kind = "merge"
bead = "feature"
{merge}''')
    return path


def setup(base: Path) -> tuple[str, Path]:
    repo = make_repo(base / "repo")
    fifo = base / "edit.fifo"
    os.mkfifo(fifo)
    return repo, fifo


def edit_while_held(srv, fifo: Path, edit: Callable[[str], None]) -> threading.Thread:
    """Once the workflow's gate opens the fifo (the claim is done by then), `edit(worktree)`, then let it go on."""
    failed: list[BaseException] = []

    def go() -> None:
        try:
            with open(fifo, "w") as pipe:  # returns when the gate opens it to read
                edit(session_file(srv, "dev", "worktree").strip())
                pipe.write("go\n")
        except BaseException as exc:  # noqa: BLE001 - handed to the test below
            failed.append(exc)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.failed = failed
    return thread


def joined(thread: threading.Thread) -> None:
    thread.join(TIMEOUT)
    assert not thread.is_alive(), f"the workflow's gate did not open the fifo within {TIMEOUT} s"
    assert not thread.failed, thread.failed


def merges(srv) -> str:
    return session_file(srv, "merges", "list")


def feature(worktree: str) -> None:
    write(os.path.join(worktree, "feature.txt"), "the feature\n")  # left uncommitted, as an agent may


def clash(repo: str, worktree: str) -> None:
    """The developer's edit of a line that the user changes on main meanwhile, and commits."""
    write(os.path.join(worktree, "shared.txt"), "one\nTWO by dev\nthree\n")
    commit_file(repo, "shared.txt", "one\nTWO by the user\nthree\n", "the user's own edit on main")


@pytest.mark.parametrize("waiting", [[], ["--poll", "0.2"]], ids=["blocking", "polling"])
def test_the_developer_works_in_a_worktree_and_the_merge_step_waits_for_its_merge(waiting: list[str]) -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)
    with anvil_server() as srv:
        editor = edit_while_held(srv, fifo, feature)
        done = run_conductor(srv, workflow(base, repo, fifo), base / "state", *waiting, timeout=120)
        joined(editor)
        why = f"{done.stdout}\n{done.stderr}\n{merges(srv)}"
        assert (done.returncode, done.stdout) == (0, "done: all steps of team done\n"), why
        worktree = session_file(srv, "dev", "worktree").strip()
        assert worktree and worktree != repo and session_file(srv, "dev", "cwd").strip() == worktree, why
        assert f"Work in {worktree} on Add the feature." in session_file(srv, "dev", "log"), why
        (bead,) = [line.split()[0] for line in session_file(srv, "beads", "list").splitlines()]
        assert merges(srv).startswith(f"{bead} anvil/bead/{bead} merged"), why
        assert f"merge merged: bead {bead}'s branch: merged" in done.stderr, why
    # the edit, committed by anvilfs as the session, is on main, and REPO's checkout followed it
    assert git(repo, "show", "main:feature.txt") == "the feature"
    assert open(os.path.join(repo, "feature.txt")).read() == "the feature\n"
    assert git(repo, "log", "-1", "--format=%an", "main") == "dev" and status(repo) == ""


def test_a_conflict_fails_the_merge_step_with_what_conflicts() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)

    with anvil_server() as srv:
        editor = edit_while_held(srv, fifo, lambda worktree: clash(repo, worktree))
        done = run_conductor(srv, workflow(base, repo, fifo), base / "state", timeout=120)
        joined(editor)
        why = f"{done.stdout}\n{done.stderr}\n{merges(srv)}"
        (bead,) = [line.split()[0] for line in session_file(srv, "beads", "list").splitlines()]
        assert done.returncode == 1 and done.stdout.startswith(
            f"failed: merge merged: bead {bead}'s branch: conflict: "), why
        assert "shared.txt" in done.stdout.splitlines()[0], why
        assert session_file(srv, f"beads/{bead}", "status") == "pending\n", why  # back to its worker
    assert git(repo, "show", "main:shared.txt") == "one\nTWO by the user\nthree" and status(repo) == ""


def test_a_conflict_can_be_branched_on_instead() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)

    with anvil_server() as srv:
        editor = edit_while_held(srv, fifo, lambda worktree: clash(repo, worktree))
        done = run_conductor(srv, workflow(base, repo, fifo, merge='else = "finish"\n'), base / "state",
                             timeout=120)
        joined(editor)
        assert done.returncode == 0 and done.stdout.startswith("done: merge merged: "), done.stderr
        assert ": conflict: " in done.stdout, done.stdout


def test_a_bead_with_nothing_done_completes_as_no_change_and_its_merge_step_goes_on() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)
    with anvil_server() as srv:
        editor = edit_while_held(srv, fifo, lambda worktree: None)  # the developer changed nothing
        path = workflow(base, repo, fifo, complete='no_change = "nothing needed doing"\n')
        done = run_conductor(srv, path, base / "state", timeout=120)
        joined(editor)
        why = f"{done.stdout}\n{done.stderr}\n{merges(srv)}"
        assert (done.returncode, done.stdout) == (0, "done: all steps of team done\n"), why
        (bead,) = [line.split()[0] for line in session_file(srv, "beads", "list").splitlines()]
        assert session_file(srv, f"beads/{bead}", "result") == "no-change: nothing needed doing\n", why
        assert f"bead {bead}'s branch: no-change: nothing needed doing" in done.stderr, why
        assert merges(srv) == "", why


def test_a_conductor_killed_in_a_merge_step_goes_on_with_it_after_a_restart() -> None:
    """REPO has local changes on main: the entry waits `blocked` (said once), the conductor is SIGKILLed in its
    merge step, started again (it repeats no claim, prompt or completion), and once the user cleaned up and
    retried, the merge is seen."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)
    write(os.path.join(repo, "README"), "the user's own edit\n")  # uncommitted, on main
    with anvil_server() as srv:
        path = workflow(base, repo, fifo)
        editor = edit_while_held(srv, fifo, feature)
        first = Watched(conductor_argv(srv, path, base / "state"))
        first.until("is blocked")
        joined(editor)
        first.proc.send_signal(signal.SIGKILL)
        assert first.proc.wait(timeout=TIMEOUT) == -signal.SIGKILL

        second = Watched(conductor_argv(srv, path, base / "state"))
        second.until("is blocked")  # the step done again from its start: it reads the same entry
        assert open(os.path.join(repo, "README")).read() == "the user's own edit\n"
        git(repo, "checkout", "--", "README")  # the user puts it away
        (bead,) = [line.split()[0] for line in session_file(srv, "beads", "list").splitlines()]
        with srv.connect("test", timeout=TIMEOUT) as client:
            client.write_file("merges/ctl", f"retry {bead}\n".encode())
        code, out, err = second.finish()
        why = f"{out}\n{''.join(first.seen)}\n{err}\n{merges(srv)}"
        assert (code, out) == (0, "done: all steps of team done\n"), why
        assert err.count("is blocked") == 1, why  # said once per run, however long it waits
        assert prompts(srv, ["dev"]) == {"dev": [f"[conductor team run {RUN} step ask]"]}, why
        for step in ("feature", "take", "done"):
            assert f"conductor: {step}: bead" not in err, why  # replayed from the record, not done again
    assert git(repo, "show", "main:feature.txt") == "the feature" and status(repo) == ""


def rework_workflow(base: Path, repo: str, fifo: Path) -> Path:
    """The claim, the work, the complete and the merge in a repeat: a conflict sends the worker round again."""
    path = base / "rework.toml"
    path.write_text(head("rework", repo, "Edit the shared file") + f'''

[[steps]]
id = "rounds"
kind = "repeat"
max_rounds = 3
  [[steps.steps]]
  id = "take"
  kind = "bead"
  action = "claim"
  bead = "feature"
  session = "dev"
  [[steps.steps]]
  id = "ask"
  kind = "prompt"
  to = ["dev"]
  text = "Round {{round}}: edit shared.txt in {{worktree.dev}}; resolve any conflict markers."
  [[steps.steps]]
  id = "answered"
  kind = "wait"
  sessions = ["dev"]
  [[steps.steps]]
  id = "edit"
  kind = "gate"
  run = ["sh", "-c", "read x < {fifo}"]
  [[steps.steps]]
  id = "done"
  kind = "bead"
  action = "complete"
  bead = "feature"
  [[steps.steps]]
  id = "merged"
  kind = "merge"
  bead = "feature"
  then = "break"
  else = "next"
''')
    return path


def test_a_conflict_taken_round_again_is_resolved_by_the_worker_and_merged() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)
    seen: list[str] = []

    def resolve(worktree: str) -> None:
        seen.append(open(os.path.join(worktree, "shared.txt")).read())
        write(os.path.join(worktree, "shared.txt"), "one\nTWO by both\nthree\n")

    with anvil_server() as srv:
        first = edit_while_held(srv, fifo, lambda worktree: clash(repo, worktree))
        proc = Watched(conductor_argv(srv, rework_workflow(base, repo, fifo), base / "state"))
        joined(first)
        # round 1's gate must have closed the fifo first: a writer opened while its reader still held it
        # would hand "go" to round 1 and leave round 2's gate waiting for ever
        proc.until("gate edit@1:")
        second = edit_while_held(srv, fifo, resolve)  # round 2's gate: the claim has put the markers there
        code, out, err = proc.finish(timeout=120)  # rounds of git and gates: long on a busy machine
        why = f"{out}\n{err}\n{merges(srv)}"
        assert (code, out) == (0, "done: all steps of rework done\n"), why
        joined(second)
        assert "merge merged@1: bead edit-shared-001's branch: conflict: " in err, why
        assert "merge merged@2: bead edit-shared-001's branch: merged" in err, why
    assert "<<<<<<<" in seen[0] and "TWO by dev" in seen[0] and "TWO by the user" in seen[0], seen
    assert git(repo, "show", "main:shared.txt") == "one\nTWO by both\nthree" and status(repo) == ""


def test_a_claim_for_a_developer_in_a_turn_is_made_once_the_turn_ends() -> None:
    """The server refuses a claim for a worktree session while it runs a turn (its branch is not switched under
    a running agent): the conductor waits for the turn's end and claims then."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    repo, fifo = setup(base)
    with anvil_server() as srv:
        with srv.connect("test", timeout=TIMEOUT) as client:
            client.write_file("ctl", f"new sim {repo} worktree name=dev\n".encode())
            client.write_file("dev/in", b"Think hard. sim:hang\n")  # a turn that lasts until interrupted
        editor = edit_while_held(srv, fifo, feature)
        proc = Watched(conductor_argv(srv, workflow(base, repo, fifo), base / "state"))
        proc.until("dev is in a turn in its worktree: claiming it once the turn ends")
        assert session_file(srv, "dev", "status").startswith("running"), "".join(proc.seen)
        with srv.connect("test", timeout=TIMEOUT) as client:
            client.write_file("dev/ctl", b"interrupt\n")
        code, out, err = proc.finish(timeout=120)  # rounds of git and gates: long on a busy machine
        joined(editor)
        why = f"{out}\n{err}\n{merges(srv)}"
        assert (code, out) == (0, "done: all steps of team done\n"), why
    assert git(repo, "show", "main:feature.txt") == "the feature" and status(repo) == ""
