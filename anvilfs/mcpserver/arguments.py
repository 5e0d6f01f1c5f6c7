"""The arguments of `anvilfs mcp`'s tools, checked before any file is touched, so that a model's mistake is
answered with what to give instead: ids and names as the server makes them, texts, paths in the tree.
"""

from __future__ import annotations

import re

from .tree import ToolError

S, A, B, N = "string", "array", "boolean", "integer"  # the JSON schema types a tool's parameter may have
_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\Z")  # bead and convoy ids (beads/ids.py; a client imports no server code)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # session, role and backend names, message ids
# kind -> (pattern, what the refusal says, where the model finds a good one)
_KINDS = {
    "bead": (_ID, "id: bead ids are lower-case letters, digits and '-'", "as ready or read beads/list shows it, "
             "e.g. fix-login-001"),
    "convoy": (_ID, "id: convoy ids are lower-case letters, digits and '-'", "as read convoys/list shows it"),
    "message": (_NAME, "id", "as inbox lists it"),
    "session": (_NAME, "name: 1-64 letters, digits, '.', '_' or '-'", "as read list shows it"),
    "role": (_NAME, "name", "as read roles shows it"),
    "backend": (_NAME, "name", "as read backends shows it"),
}
MAX_LINE = 4000  # bytes of one ctl line (SPEC §4; tree/ctl.py): a longer text goes in a file, or is refused here

def given_name(args: dict, key: str, kind: str) -> str:
    value = args.get(key, "")
    pattern, rule, where = _KINDS[kind]
    if not pattern.match(value):
        raise ToolError(f"{key}: {value!r} is no {kind} {rule}; give one {where}")
    return value


def given_text(args: dict, key: str) -> str:
    value = args.get(key, "")
    if not value.strip():
        raise ToolError(f"{key}: give a text; it is empty")
    return value


def tree_path(path: str) -> str:
    """A path in the tree, relative to its root (`agent/` and a leading `/` taken off); never `..`."""
    path = path.strip().removeprefix("/").removeprefix("agent/").strip("/")
    if path == "agent":
        path = ""
    parts = path.split("/") if path else []
    if any(part in ("", ".", "..") for part in parts):
        raise ToolError(f"path: {path!r} is no path in the tree; write one like beads/list or agent/beads")
    return path


def check_arguments(tool: str, params: dict[str, tuple[str, str]], required: tuple[str, ...], args: dict) -> dict:
    """The arguments as the tool's schema says, or ToolError naming what is wrong."""
    if not isinstance(args, dict):
        raise ToolError(f"{tool}: give the arguments as an object")
    for key, value in args.items():
        if key not in params:
            raise ToolError(f"{tool}: no argument {key!r}; it takes {', '.join(params) or 'none'}")
        kind = params[key][0]
        good = (isinstance(value, str) if kind == S else isinstance(value, bool) if kind == B
                else isinstance(value, int) and not isinstance(value, bool) if kind == N
                else isinstance(value, list) and all(isinstance(item, str) for item in value))
        if not good:
            raise ToolError(f"{tool}: {key} must be {'a list of strings' if kind == A else 'an integer' if kind == N else 'a ' + kind}")
    missing = [key for key in required if key not in args]
    if missing:
        raise ToolError(f"{tool}: give {', '.join(missing)}")
    return args
