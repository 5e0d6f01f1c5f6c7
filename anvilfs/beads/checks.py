"""The checks of what a client gives the beads' and convoys' verbs, and of the dependencies found at load.

Each check raises InvalidRequest naming what was wrong and how to write it (SPEC §6); they are shared by
board.py and convoys.py.
"""

from __future__ import annotations

import re

from ..errors import InvalidRequest
from ..journal import has_line_breakers
from .model import MAX_TEXT, MAX_TITLE, Bead

LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # roles and holder names: they name files (ready.<role>)


def find_cycles(beads: dict[str, Bead]) -> list[list[str]]:
    """Each dependency cycle once, as the ids around it (first id repeated at the end).

    A depth-first walk with its own stack, not Python's: a chain of beads as long as a client likes
    (1,100 made one after the other) must not reach the recursion limit at load (issue 32)."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in sorted(beads):
        if root in state:
            continue
        path, stack = [root], [iter(beads[root].depends_on)]
        state[root] = 1
        while stack:
            dep = next(stack[-1], None)
            if dep is None:  # every dependency of the bead on top seen: it is done
                stack.pop()
                state[path.pop()] = 2
            elif dep in beads and state.get(dep) == 1:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep in beads and dep not in state:
                state[dep] = 1
                path.append(dep)
                stack.append(iter(beads[dep].depends_on))
    return cycles


def check_title(title: str) -> None:
    if not title.strip():
        raise InvalidRequest("new: the title is empty; give one in quotes: new \"Research auth\" researcher \"what to do\"")
    if len(title) > MAX_TITLE:
        raise InvalidRequest(f"new: the title is {len(title)} characters; at most {MAX_TITLE} (put the rest in the description)")
    if has_line_breakers(title):
        raise InvalidRequest("new: the title contains a control character; titles are one line")


def check_label(what: str, value: str) -> None:
    if not LABEL.match(value):
        raise InvalidRequest(f"{what} {value!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")


def check_text(what: str, text: str) -> None:
    if len(text.encode()) > MAX_TEXT:
        raise InvalidRequest(f"{what} is {len(text.encode())} bytes; at most {MAX_TEXT}")


def check_reason(verb: str, reason: str) -> None:
    if not reason.strip():
        raise InvalidRequest(f"{verb}: say why: {verb} <reason>")
    check_text(f"{verb}: the reason", reason)
