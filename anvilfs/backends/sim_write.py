"""`sim:write PATH TEXT`: the simulated agent edits files, so that flows which need an agent's changes
in its directory (a worktree's) run without an agent CLI.

Every path of a prompt is checked before any file is written: a refused one fails the turn with
nothing written. The checks keep the writes inside the session's cwd; they are a fake agent's
manners, not a sandbox (a real agent's CLI writes where it likes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..sessions.backend import TurnFailed

DIRECTIVE = "sim:write"
USAGE = f"`{DIRECTIVE} PATH TEXT` on a line of its own, PATH relative to the session's directory"


@dataclass(frozen=True)
class Write:
    path: str  # as the prompt gave it, for the answer
    target: str  # its real path, inside the session's directory
    data: bytes


def directive(line: str) -> str | None:
    """What follows `sim:write` when the line is one (leading blanks allowed), else None."""
    stripped = line.lstrip(" \t")
    if not stripped.startswith(DIRECTIVE):
        return None
    rest = stripped[len(DIRECTIVE):]
    if rest and rest[0] not in " \t":
        return None  # `sim:writer` is some other word
    return rest.lstrip(" \t")


def planned(prompt: str, cwd: str) -> list[Write]:
    """The prompt's writes in order, each checked; TurnFailed names the first one refused."""
    writes = []
    for line in prompt.split("\n"):
        args = directive(line.rstrip("\r"))
        if args is None:
            continue
        path, _, text = args.partition(" ")
        if not path:
            raise TurnFailed(f"{DIRECTIVE} without a path: write {USAGE}; nothing was written")
        writes.append(Write(path, _target(path, cwd), text.encode() + b"\n"))
    return writes


def _target(path: str, cwd: str) -> str:
    def refuse(why: str) -> TurnFailed:
        return TurnFailed(f"{DIRECTIVE} {path}: {why}; write {USAGE}; nothing was written")

    if "\0" in path:
        raise refuse("a path cannot hold a NUL byte")
    if os.path.isabs(path):
        raise refuse("the path is absolute")
    if ".." in path.split("/"):
        raise refuse("the path has a `..` component")
    root = os.path.realpath(cwd)
    if not os.path.isdir(root):
        raise refuse(f"the session's directory {cwd} is not a directory")
    target = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, target]) != root:
        raise refuse(f"it leads out of the session's directory {cwd} through a symbolic link (to {target})")
    if target == root or os.path.isdir(target):
        raise refuse("that is a directory, not a file")
    return target


def write_all(writes: list[Write]) -> list[str]:
    """Write each file and flush it to disk; the answer's lines saying what was written."""
    said = []
    for w in writes:
        try:
            os.makedirs(os.path.dirname(w.target), exist_ok=True)
            with open(w.target, "wb") as f:
                f.write(w.data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            done = f" after writing {', '.join(x.path for x in writes[:len(said)])}" if said else ""
            raise TurnFailed(f"{DIRECTIVE} {w.path}: {exc.strerror or exc}{done}") from exc
        said.append(f"[simulated] wrote {w.path} ({len(w.data)} bytes)\n")
    return said


def quoted(line: str) -> str:
    """A prompt's line as an answer may repeat it: a write named without the directive, so that an
    answer quoted in the next prompt does not write again."""
    args = directive(line)
    if args is None:
        return line
    return f"(a file to write: {args.partition(' ')[0]})"
