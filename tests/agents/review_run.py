"""The review cycle of conductor/examples/review.toml with real Claude Code sessions against the stub.

    stub.script = ReviewScript()                        # round 1: ISSUE lines, the fix, round 2: NO ISSUES
    with agent_server(stub, "claude", env=claude_env(stub)) as srv:
        workflow = copy_example(base)                   # the example, untouched, in a temp dir (cwd ".")
        done = run_conductor(srv, workflow, base / "state")
        main_requests(stub)                             # the conversations' requests, side requests left out

The stub cannot see which anvilfs session asks (the reviewers run Claude Code
in one directory), but Claude Code names its conversation in every
request (the X-Claude-Code-Session-Id header: the `--session-id` the
claude backend gave it), and each answer says its serial number and that
conversation, so a session's transcript tells which conversation is its.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from harness.server import REPO_ROOT, AnvilServer
from harness.worktrees import git

from claude_env import is_main, main_requests
from stubs import Failure, Reply, Request, StubModels, Text

EXAMPLE = REPO_ROOT / "conductor" / "examples" / "review.toml"
RUN = "t1"
# s: eleven turns of Claude Code, six at once, on two cores shared with other tests. No turn
# timeout is configured on the claude backend, so this bounds a hung turn too.
CONDUCTOR_TIMEOUT = 600
_STEP = re.compile(r"^(Review|Fix) round (\d+):", re.MULTILINE)  # the templates' first lines


def conversation_of(request: Request) -> str:
    return request.headers.get("X-Claude-Code-Session-Id", "")


def step_of(request: Request) -> tuple[str, int] | None:
    """("Review", 1), ("Fix", 1) ... from the prompt's first template line (the conductor's marker is above it)."""
    found = _STEP.search(request.prompt)
    return (found.group(1), int(found.group(2))) if found else None


@dataclass(frozen=True)
class Answer:
    conversation: str
    step: tuple[str, int]
    text: str


class ReviewScript:
    """The stub's script: ISSUE lines for round 1's reviews, a fix for a fix, NO ISSUES after round 1.
    A turn's request it does not expect gets HTTP 400, so the turn fails loudly; a side request, a text."""

    def __init__(self) -> None:
        self.serial = itertools.count(1)
        self.lock = threading.Lock()
        self.answers: list[Answer] = []  # what it said to the main requests, in order

    def __call__(self, request: Request) -> Reply:
        if not is_main(request):
            return Text("[stub anthropic] a side request")  # none seen with Claude Code 2.1.332 (the report)
        step = step_of(request)
        if step is None or request.after_tool:
            return Failure(400, f"stub: the review script expects no such request: {request.prompt[:120]!r}")
        conversation = conversation_of(request)
        with self.lock:
            head = f"[stub anthropic] answer {next(self.serial)} in conversation {conversation} to {step[0]} round"
            answer = Answer(conversation, step, f"{head} {step[1]}\n{_body(*step)}")
            self.answers.append(answer)
        return Text(answer.text)

    def answer(self, conversation: str, step: tuple[str, int]) -> str:
        """What it answered to that step in that conversation."""
        with self.lock:
            found = [a.text for a in self.answers if (a.conversation, a.step) == (conversation, step)]
        assert found, f"the stub was not asked {step} in conversation {conversation}"
        return found[-1]

    def last_answers(self) -> dict[str, str]:
        """Each conversation's last answer."""
        with self.lock:
            return {a.conversation: a.text for a in self.answers}


def _body(kind: str, round_: int) -> str:
    if kind == "Fix":
        return f"Fixed what the reviewers found in round {round_}: the parser now checks its input."
    if round_ == 1:
        return "ISSUE: the parser does not check its input.\nISSUE: no test covers an empty file."
    return "NO ISSUES"


def copy_example(base: Path) -> Path:
    """conductor/examples/review.toml as it is, in base, made a git repository: its sessions' cwd "." is base,
    and its developer works in a worktree of it."""
    path = base / "review.toml"
    shutil.copyfile(EXAMPLE, path)
    git(base, "init", "-q", "--initial-branch=main")
    git(base, "add", "review.toml")
    git(base, "commit", "-q", "-m", "the example")
    return path


def run_conductor(srv: AnvilServer, workflow: Path, state: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "conductor", "run", "-a", srv.address, "--state", str(state), "--run", RUN,
            "--retry-for", "300", str(workflow)]
    try:
        return subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, timeout=CONDUCTOR_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the conductor did not end within {CONDUCTOR_TIMEOUT}s; it said:\n"
                             f"{_text(exc.stdout)}\n{_text(exc.stderr)}") from None


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def asked(stub: StubModels) -> dict[tuple[str, str], int]:
    """How many main requests each (conversation, prompt) pair made: each must be 1."""
    counts: dict[tuple[str, str], int] = {}
    for request in main_requests(stub):
        key = (conversation_of(request), request.prompt)
        counts[key] = counts.get(key, 0) + 1
    return counts


def describe(stub: StubModels) -> str:
    """Every request the stub saw, one line each: for a failure's message and the report."""
    lines = [f"{'main' if is_main(r) else 'side'} {conversation_of(r)[:8]} tools={len(r.tools)} model={r.model} "
             f"prompt={r.prompt[:70]!r}" for r in stub.requests()]
    return "\n".join(["stub requests:", *lines, f"unknown paths: {stub.unknown}"])
