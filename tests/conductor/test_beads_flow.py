"""The second example, conductor/examples/beads.toml, as shipped (backends and cwd swapped for the fakes).

Research -> implement -> review over beads, then mail to human: each bead
made once, claimed and completed, the review loop ending in round 2 (the
fake reviewer's clean round), and one mail; then the same with the
conductor SIGKILLed at three seeded crash points on the way, which must
change nothing.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import tempfile
from pathlib import Path

from harness.server import REPO_ROOT
from harness.worktrees import make_repo
from review_cycle import RUN, TIMEOUT, prompts, review_server, run_conductor

EXAMPLE = REPO_ROOT / "conductor" / "examples" / "beads.toml"
ROLES = {"researcher": "developer", "dev": "developer", "reviewer": "reviewer"}


def fake_example(base: Path, *, worktree: bool = True) -> Path:
    """The example with each session on a fake backend, in a work directory of the test's: a git repository
    (the developer works in a worktree of it; the fake edits nothing, so its bead completes as no-change).
    Without `worktree`, the developer works in that directory itself, and there is no merge step."""
    make_repo(base / "work")
    text = EXAMPLE.read_text().replace('cwd = "."', f'cwd = "{base / "work"}"')
    if not worktree:
        text = re.sub(r'\nworktree = true\n', "\n", text)
        text = re.sub(r'\[\[steps\]\]\nid = "impl-merged"\n.*?\n\n', "", text, flags=re.DOTALL)
    for session, backend in ROLES.items():
        text = re.sub(rf'(\[sessions\.{session}\]\nbackend = )"claude"', rf'\1"{backend}"', text)
    path = base / "beads.toml"
    path.write_text(text)
    return path


def outcome(srv) -> dict:
    with srv.connect("test", timeout=TIMEOUT) as client:
        beads = [line.split(maxsplit=4) for line in client.read_file("beads/list").decode().splitlines()]
        mail = [json.loads(client.read_file(f"human/inbox/{e.name}")) for e in client.list_dir("human/inbox")]
    return {"beads": [(b[0], b[1], b[4]) for b in beads], "mail": [(m["from"], m["type"], m["subject"]) for m in mail]}


WANT = {"beads": [("research-auth-001", "completed", "Research the auth system"),
                  ("impl-oauth-002", "completed", "Implement OAuth")],
        "mail": [("dev", "REVIEW_REQUEST", "OAuth implemented and reviewed")]}
HEAD = f"[conductor beads run {RUN}"
PROMPTS = {"researcher": [f"{HEAD} step study]"],
           "dev": [f"{HEAD} round 1 step build]", f"{HEAD} round 2 step build]"],
           "reviewer": [f"{HEAD} round 1 step review]", f"{HEAD} round 2 step review]"]}


def test_research_implement_review_over_beads() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        done = run_conductor(srv, fake_example(base), base / "conductor")
        why = f"{done.stdout}{done.stderr}"
        assert done.returncode == 0 and done.stdout.startswith("done:"), why
        assert outcome(srv) == WANT, why
        assert prompts(srv, list(ROLES)) == PROMPTS, why
        assert "merge impl-merged: bead impl-oauth-002's branch: no-change: the developer changed nothing" in done.stderr, why
        with srv.connect("test", timeout=TIMEOUT) as client:
            result = client.read_file("beads/research-auth-001/result").decode()
            description = client.read_file("beads/impl-oauth-002/description").decode()
        assert "[fake developer researcher]" in result and result.strip() in description, (result, description)


def test_the_beads_flow_survives_sigkills_at_seeded_points() -> None:
    seed = int(os.environ.get("CONDUCTOR_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow, history = fake_example(base), [f"seed {seed}"]
        for _ in range(3):
            k = rng.randint(2, 9)
            r = run_conductor(srv, workflow, base / "conductor", env={"ANVILFS_CONDUCTOR_CRASH_AT": str(k)})
            history.append(f"crash point {k}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
            assert r.returncode == -signal.SIGKILL, "\n".join(history)
        done = run_conductor(srv, workflow, base / "conductor")
        why = "\n".join(history) + f"\n{done.stdout}{done.stderr}"
        assert done.returncode == 0, why
        assert outcome(srv) == WANT, why
        assert prompts(srv, list(ROLES)) == PROMPTS, why
