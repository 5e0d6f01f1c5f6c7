"""conductor/examples/review.toml run by the real conductor with real Claude Code sessions against the stub.

Five reviewers and one developer, all on the built-in `claude` backend (cwd
"." of the workflow's copy). The stub's script (review_run.ReviewScript)
makes round 1's reviews report ISSUE lines, answers the fix, and makes
round 2's reviews say NO ISSUES, so the conductor must end after round 2's
check, having sent each prompt once: once in each session's transcript,
and once to the model (one main request per conversation and prompt; Claude
Code's side requests, offering no tools, are left out of the count).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from conductor.journal import read_record
from conductor.markers import prompts_in_log
from drive import agent_server, cli
from claude_env import claude_env, main_requests
from review_run import RUN, ReviewScript, asked, conversation_of, copy_example, describe, run_conductor, step_of

REVIEWERS = [f"r{i}" for i in range(1, 6)]
SESSIONS = ["dev", *REVIEWERS]


def test_the_example_review_cycle_with_claude_code_ends_after_two_rounds_each_prompt_sent_once(stub) -> None:
    script = ReviewScript()
    stub.script = script
    base = Path(tempfile.mkdtemp(prefix="review."))
    try:
        with agent_server(stub, "claude", env=claude_env(stub)) as srv:
            done = run_conductor(srv, copy_example(base), base / "state")
            why = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}\n{describe(stub)}"
            assert done.returncode == 0 and done.stdout.startswith("done:"), why
            logs = {n: cli(srv, "read", f"agent/{n}/log") for n in SESSIONS}
            outs = {n: cli(srv, "read", f"agent/{n}/out") for n in SESSIONS}
        assert_two_rounds(read_record(base / "state", "review"), done.stderr)
        assert {n: prompts_in_log(log) for n, log in logs.items()} == expected_prompts(), why
        conversations = {n: conversation_in(logs[n]) for n in SESSIONS}
        assert len(set(conversations.values())) == len(SESSIONS), f"one conversation each: {conversations}\n{why}"
        assert_each_prompt_reached_the_stub_once(stub, conversations, why)
        last = script.last_answers()
        for name in SESSIONS:
            assert outs[name].strip() == last[conversations[name]], f"{name}'s out is not its last answer\n{why}"
        assert_outs_were_passed_on(stub, script, conversations, why)
        print(describe(stub))  # what Claude Code sent: shown with -s, and on a failure
    finally:
        shutil.rmtree(base, ignore_errors=True)


def expected_prompts() -> dict[str, list[str]]:
    """The first lines of each session's prompts: rounds 1 and 2 for a reviewer, round 1's fix for dev."""
    head = f"[conductor review run {RUN} round"
    reviews = {n: [f"{head} 1 step review]", f"{head} 2 step review]"] for n in REVIEWERS}
    return reviews | {"dev": [f"{head} 1 step fix]"]}


def expected_steps(name: str) -> list[tuple[str, int]]:
    return [("Fix", 1)] if name == "dev" else [("Review", 1), ("Review", 2)]


def conversation_in(log: str) -> str:
    """The one conversation the stub's answers in a session's transcript name (its prompts quote others')."""
    parts = re.split(r"^--- (\w+) .*\n", log, flags=re.MULTILINE)  # [before, kind, text, kind, text ...]
    answers = "".join(text for kind, text in zip(parts[1::2], parts[2::2]) if kind == "answer")
    found = set(re.findall(r"^\[stub anthropic\] answer \d+ in conversation (\S+)", answers, re.MULTILINE))
    assert len(found) == 1, f"a session's answers must name one conversation, not {found}:\n{log}"
    return found.pop()


def assert_two_rounds(record: dict, stderr: str) -> None:
    """The record and the progress on stderr: round 1's review and fix, round 2's clean check, no round 3."""
    done = record["done"]
    assert record["finished"] == {"outcome": "done", "why": "all steps of review done"}, record
    assert {"review@1", "clean@1", "fix@1", "fixed@1", "review@2", "clean@2"} <= done.keys(), record
    assert (done["clean@1"], done["clean@2"]) == ("next", "break"), record
    assert not {"fix@2", "fixed@2", "review@3"} & done.keys(), f"the cycle went on after round 2's review: {record}"
    assert "clean@2: none of ['r1', 'r2', 'r3', 'r4', 'r5'] contains 'ISSUE:': True" in stderr, stderr
    assert "@3" not in stderr and "fix@2" not in stderr, stderr


def assert_each_prompt_reached_the_stub_once(stub, conversations: dict[str, str], why: str) -> None:
    counts = asked(stub)  # 5 reviewers x 2 rounds + 1 fix
    assert set(counts.values()) == {1} and len(counts) == 11, f"main requests per conversation, prompt: {counts}\n{why}"
    steps: dict[str, list[tuple[str, int] | None]] = {}
    for request in main_requests(stub):
        steps.setdefault(conversation_of(request), []).append(step_of(request))
    for name in SESSIONS:
        assert steps.get(conversations[name]) == expected_steps(name), f"{name}: {steps}\n{why}"


def assert_outs_were_passed_on(stub, script: ReviewScript, conversations: dict[str, str], why: str) -> None:
    """What the model saw: the fix prompt quoted each reviewer's round-1 answer, round 2's reviews the fix."""
    requests = main_requests(stub)
    fix = next(r for r in requests if step_of(r) == ("Fix", 1))
    for name in REVIEWERS:
        review = script.answer(conversations[name], ("Review", 1))
        assert f"{name}: {review}" in fix.prompt, f"the fix prompt lacks {name}'s review {review!r}\n{why}"
    fixed = script.answer(conversations["dev"], ("Fix", 1))
    for request in requests:
        if step_of(request) == ("Review", 2):
            assert fixed in request.prompt, f"a round-2 review lacks the fix {fixed!r}\n{why}"
