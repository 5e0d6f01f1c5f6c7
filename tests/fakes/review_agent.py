#!/usr/bin/env python3
"""A fake reviewer or developer for the review-cycle tests; it says it is fake in every answer.

    review_agent.py reviewer    # the prompt on stdin; answers with issues in the rounds that have them
    review_agent.py developer   # the prompt on stdin; answers that it fixed what the prompt lists

Deterministic, so that a run killed and restarted answers exactly as an uninterrupted one: the round is
read from the prompt (the first "round N" in it), and a reviewer reports issues in the rounds listed
in $REVIEW_AGENT_ISSUE_ROUNDS (comma-separated, default "1"), else the phrase "NO ISSUES". The answer
repeats the prompt's first line, so a transcript shows which prompt it answered.

A prompt with a line `hold PATH` opens PATH (a FIFO), if it is there, for reading first: the turn runs until
a writer opens it, or the process is killed (a test stops the server during the turn, then removes PATH).
"""

from __future__ import annotations

import os
import re
import sys

NO_ISSUES = "NO ISSUES"


def round_of(prompt: str) -> int:
    found = re.search(r"\bround[ =:]*(\d+)", prompt, re.IGNORECASE)
    return int(found.group(1)) if found else 1


def answer(role: str, prompt: str, name: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
    number = round_of(prompt)
    head = f"[fake {role} {name}] answering: {first}\n"
    if role == "developer":
        return head + f"Fixed the issues of round {number}.\n"
    issue_rounds = {int(r) for r in os.environ.get("REVIEW_AGENT_ISSUE_ROUNDS", "1").split(",") if r.strip()}
    if number in issue_rounds:
        return head + f"ISSUE: {name} found a problem in round {number} (fake).\n"
    return head + f"{NO_ISSUES} in round {number}.\n"


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in ("reviewer", "developer"):
        sys.stderr.write("usage: review_agent.py reviewer|developer  (the prompt on stdin)\n")
        return 2
    name = os.environ.get("ANVILFS_SESSION", "?")
    prompt = sys.stdin.read()
    for line in prompt.splitlines():
        if line.startswith("hold ") and os.path.exists(line.removeprefix("hold ")):
            with open(line.removeprefix("hold ")) as fifo:
                fifo.read()
    sys.stdout.write(answer(sys.argv[1], prompt, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
