"""The review cycle of scripts/ (review-cycle.sh in bash, review-cycle.rc in 9base's rc) against a real
`anvilfs serve`, through `anvilfs read/write`; the agents are tests/fakes/review_agent.py on command
backends (an ISSUE from every reviewer in round 1, NO ISSUES in round 2): tests/harness/review.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.prerequisites import require
from harness.review import (DEVELOPER, REVIEWERS, SCRIPT_RC, SCRIPT_SH, prompts, review_server, reviewer_prompt,
                            run_script)


@pytest.fixture(params=["bash", "rc"])
def script(request) -> list[str]:
    """The command that runs one script: bash's, or Plan 9's rc (9base; under CI=true it must be there)."""
    if request.param == "rc":
        return [require("rc"), str(SCRIPT_RC)]
    return [shutil.which("bash") or "/bin/bash", str(SCRIPT_SH)]


@pytest.fixture
def review():
    with review_server() as (srv, work):
        yield srv, work
        print(srv.trace_tail())  # shown when the test failed


def logs(srv) -> dict[str, list[str]]:
    return {name: prompts(srv.run_cli("read", f"agent/{name}/log").stdout) for name in (*REVIEWERS, DEVELOPER)}


def assert_developer_prompt(text: str, number: int) -> None:
    head, *rest = text.splitlines()
    assert head == f"round {number}: fix what the reviewers found:", text
    for name in REVIEWERS:  # each reviewer's answer, under its name
        assert f"{name}/out:" in rest and f"ISSUE: {name} found a problem in round {number} (fake)." in rest, text


def test_the_cycle_ends_clean_after_round_2(review, script):
    srv, work = review
    # r1 is there before the script: it is used, not made again
    assert srv.run_cli("write", "agent/ctl", f"new reviewer {work} name=r1 role=reviewer").returncode == 0
    r = run_script([*script, "3"], srv, work)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == ["review-cycle: round 1: issues from r1 r2 r3 r4 r5",
                                     "review-cycle: round 2: no issues"], r.stderr
    found = logs(srv)
    for name in REVIEWERS:  # each prompt exactly once, in order
        assert found[name] == [reviewer_prompt(1, work), reviewer_prompt(2, work)], (name, found[name])
    assert len(found[DEVELOPER]) == 1, found[DEVELOPER]
    assert_developer_prompt(found[DEVELOPER][0], 1)
    listed = {line.split()[0]: line.split() for line in srv.run_cli("read", "agent/list").stdout.splitlines()}
    assert sorted(listed) == sorted((*REVIEWERS, DEVELOPER)), listed
    assert listed[DEVELOPER][1:4] == ["developer", "await", "developer"], listed  # backend status role
    assert all(listed[name][1:4] == ["reviewer", "await", "reviewer"] for name in REVIEWERS), listed


def test_max_1_ends_with_status_1(review, script):
    srv, work = review
    r = run_script([*script, "1"], srv, work)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stderr.splitlines()[-1] == "review-cycle: 1 rounds, and still issues", r.stderr
    found = logs(srv)
    assert all(found[name] == [reviewer_prompt(1, work)] for name in REVIEWERS), found
    assert len(found[DEVELOPER]) == 1, found  # the round's fixes were asked for; no round reviews them
    assert_developer_prompt(found[DEVELOPER][0], 1)


@pytest.mark.parametrize("args", [["x"], ["1", "2"], [""]])
def test_a_bad_max_is_refused_with_the_usage(review, script, args):
    srv, work = review
    r = run_script([*script, *args], srv, work)
    assert r.returncode == 2 and "usage: review-cycle" in r.stderr, (r.stdout, r.stderr)
    assert srv.run_cli("read", "agent/list").stdout == ""  # nothing was made


def test_a_failed_turn_ends_the_cycle_with_status_2(review, script):
    srv, work = review
    r = run_script([*script, "3"], srv, work, env={"BACKEND": "broken", "DEV_BACKEND": "developer"})
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == ["review-cycle: r1 is error, not await: its log says why"], r.stderr
    assert "usage: review_agent.py" in srv.run_cli("read", "agent/r1/log").stdout  # the agent's stderr


def test_a_session_that_cannot_be_made_ends_the_cycle_with_status_2(review, script):
    srv, work = review
    r = run_script([*script, "3"], srv, work, env={"DEV_BACKEND": "no-such-backend"})
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "no-such-backend" in r.stderr and r.stderr.splitlines()[-1] == "review-cycle: cannot make session dev (see agent/errors)", r.stderr


def test_no_server_ends_the_cycle_with_status_2_and_says_so(review, script):
    srv, work = review
    r = run_script([*script, "3"], srv, work, env={"NAMESPACE": str(work)})  # no socket there
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "cannot connect to unix!" in r.stderr and r.stderr.splitlines()[-1] == (
        "review-cycle: cannot read agent/list: is anvilfs serve running, and NAMESPACE its own?"), r.stderr


def test_the_scripts_are_short():
    for path in (SCRIPT_SH, SCRIPT_RC):
        assert len(Path(path).read_text().splitlines()) <= 75, path
