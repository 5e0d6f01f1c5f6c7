"""Prompt, description, result and mail templates: `{round}`, `{out.NAME}`, `{bead.ID.FIELD}`, `{session}`,
`{worktree.NAME}`.

`{round}` is the round of the innermost repeat (1, 2, ...), `{rounds}` all of
them joined with dots; `{out.NAME}` is session NAME's `out` as it is when
the step runs; `{worktree.NAME}` is the path of session NAME's git worktree
(its `worktree` file: empty for a session without one, SPEC §6a), so that a
reviewer can be pointed at a developer's work; `{bead.ID.FIELD}` is a field file of a bead, where ID is a
bead id or the id of the `bead new` step that made one. In an each's body,
`{session}` is the lane's session, `{out.{session}}` its `out` and
`{worktree.{session}}` its worktree. `{{` and
`}}` are literal braces. Anything else in braces is an error when the file
is loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BEAD_FIELDS = ("status", "title", "description", "role", "assigned_to", "result", "review", "depends_on",
               "owns", "convoy", "requires_approval", "context")
_PIECE = re.compile(r"\{((?:out|worktree)\.\{session\})\}|\{\{|\}\}|\{([^{}]*)\}|[{}]")
USAGE = ("use {round}, {rounds}, {out.SESSION}, {worktree.SESSION}, {bead.ID.FIELD} or {session}, and {{ }} for "
         "literal braces")


class TemplateError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Placeholder:
    kind: str  # round | rounds | session | out | worktree | bead
    args: tuple[str, ...] = ()


def placeholders(text: str) -> list[Placeholder]:
    """Every placeholder in the text; TemplateError names the first bad one."""
    found = []
    for piece in _PIECE.finditer(text):
        token = piece.group(0)
        if token in ("{{", "}}"):
            continue
        if _inner(piece) is None:
            raise TemplateError(f"a lone {token!r} at offset {piece.start()}: {USAGE}")
        found.append(_parse(_inner(piece)))
    return found


def _inner(piece: re.Match) -> str | None:
    return piece.group(1) or piece.group(2)


def _parse(inner: str) -> Placeholder:
    parts = inner.split(".")
    if parts in (["round"], ["rounds"], ["session"]):
        return Placeholder(parts[0])
    if parts[0] in ("out", "worktree") and len(parts) == 2 and parts[1]:
        return Placeholder(parts[0], (parts[1],))  # `{session}` for the lane's
    if parts[0] == "bead" and len(parts) == 3 and parts[1]:
        if parts[2] not in BEAD_FIELDS:
            raise TemplateError(f"{{{inner}}}: a bead has no field {parts[2]!r} (fields: {', '.join(BEAD_FIELDS)})")
        return Placeholder("bead", (parts[1], parts[2]))
    raise TemplateError(f"unknown placeholder {{{inner}}}: {USAGE}")


def render(text: str, values: dict[Placeholder, str]) -> str:
    """The text with each placeholder replaced by its value (all of them must be in `values`)."""
    def one(piece: re.Match) -> str:
        token = piece.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values[_parse(_inner(piece))]
    return _PIECE.sub(one, text)
