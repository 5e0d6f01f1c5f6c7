"""The adversarial review cycle end to end: a real server, real command agents, the conductor as a process.

The fake agents (tests/fakes/review_agent.py) report an ISSUE in round 1 and
NO ISSUES in round 2, so the conductor must stop after round 2's review,
having sent each prompt exactly once (counted in each session's `log`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from review_cycle import expected_prompts, prompts, review_server, reviewer_names, run_conductor, transcripts, write_workflow

REVIEWERS = 5


def test_the_review_cycle_stops_after_round_2_with_every_prompt_sent_once() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow = write_workflow(base, REVIEWERS)
        done = run_conductor(srv, workflow, base / "conductor")
        why = f"{done.stdout}\n{done.stderr}\n{srv.trace_tail(40)}"
        assert done.returncode == 0 and done.stdout.startswith("done:"), why
        names = ["dev", *reviewer_names(REVIEWERS)]
        assert prompts(srv, names) == expected_prompts(REVIEWERS), why
        logs = transcripts(srv, names)
        assert "NO ISSUES in round 2" in logs["r1"] and "Fixed the issues of round 1" in logs["dev"], why
        assert "ISSUE: r3 found a problem in round 1" in logs["dev"], "the fix prompt must carry the reviewers' outs"
        again = run_conductor(srv, workflow, base / "conductor")  # finished: nothing more is sent
        assert again.returncode == 0 and prompts(srv, names) == expected_prompts(REVIEWERS), again.stderr
