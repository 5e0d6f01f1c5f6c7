"""Making each action recognisable, and finding it again after a crash.

Every prompt the conductor sends starts with one line that names it:

    [conductor review run 3fa2c1 round 2 step fix]

(workflow, run, the rounds of the repeats around the step, the step's id;
no round outside a repeat). In an each's lane, the lane's session comes
before the rounds: `[conductor work run 3fa2c1 lane dev2 round 3 step ask]`,
so the prompts of two lanes to one shared session differ. Beads it makes have that line first in their
description, and mail last in its body. A prompt that may or may not have
been submitted is found, or not, in the target's `queue` (the first line of
each queued prompt) and then in its `log` (the line after each
`--- prompt N from ...` header): in that order, because the server moves a
prompt from the queue to the log in one step, so one of them has it at
every instant, and a prompt seen in neither when the queue was read
later is in the log.
"""

from __future__ import annotations

import re

_PROMPT_HEADER = re.compile(r"^--- prompt (\d+) from \S+ at \S+$")
# SPEC §5: the end of a turn that a server stop cut short ("failed" as the server goes on with the session,
# "ended" when it brought it back exited)
LOST = "lost: the server stopped during the turn"
_LOST_END = re.compile(rf"^--- (?:failed|ended) (\d+) at \S+: {re.escape(LOST)}$", re.MULTILINE)


def marker(workflow: str, run: str, rounds: tuple[int, ...], step: str, lane: str | None = None) -> str:
    where = (f" lane {lane}" if lane else "") + (f" round {'.'.join(map(str, rounds))}" if rounds else "")
    return f"[conductor {workflow} run {run}{where} step {step}]"


def in_queue(queue: str, line: str) -> bool:
    """`queue` lines are `position sender bytes first-line`."""
    return any(q.split(" ", 3)[3:] == [line] for q in queue.splitlines())


def in_log(log: str, line: str) -> bool:
    lines = log.splitlines()
    return any(_PROMPT_HEADER.match(head) and nxt == line for head, nxt in zip(lines, lines[1:]))


def prompts_in_log(log: str) -> list[str]:
    """The first line of each prompt in a transcript, in order (what the tests count)."""
    return [line for line, _ in turns_in_log(log)]


def turns_in_log(log: str) -> list[tuple[str, bool]]:
    """Each prompt's first line in a transcript, in order, and whether a server stop cut its turn short (then the
    conductor asks it again: the same line twice, answered once)."""
    lost = {found.group(1) for found in _LOST_END.finditer(log)}
    lines = log.splitlines()
    return [(nxt, header[1] in lost) for head, nxt in zip(lines, lines[1:]) if (header := _PROMPT_HEADER.match(head))]


def lost_prompt(log: str) -> str | None:
    """The text of the prompt of the transcript's last turn, if a server stop cut that turn short."""
    ends = list(_LOST_END.finditer(log))
    if not ends:
        return None
    number, end = ends[-1].group(1), ends[-1].start()
    header = None
    for found in re.finditer(rf"^--- prompt {number} from \S+ at \S+\n", log, re.MULTILINE):
        header = found
    if header is None or header.end() > end or re.search(r"^--- prompt \d+ from ", log[end:], re.MULTILINE):
        return None  # not the last turn: a prompt after it ran (or began) since
    return log[header.end():end]
