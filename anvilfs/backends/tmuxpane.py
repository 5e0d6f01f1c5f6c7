"""tmux as the tmux backend sees it: one look at a pane, where a turn began, the commands.

The backend (tmux.py) follows a turn by looking at its pane: a Pane is one
look (the cursor's row, the history's size and limit, the word a hook left
in the pane), a TurnStart the row where the turn's text begins, found again
as tmux trims the history, still_typed whether a prompt still waits on the
cursor's line, and Tmux runs the commands (argv lists, never a shell) on the
default tmux server or a private one.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

import trio

from ..hookwords import ANSWER_BUFFER, HOOK_OPTION  # pane option: a word the agent's hook could not write to us
from ..sessions import turns
from ..sessions.backend import Output
from ..sessions.turns import Outcome

PANE_FORMAT = "\t".join("#{%s}" % name for name in (
    "pane_id", "pane_pid", "window_id", "pane_dead", "pane_dead_status", "history_size", "history_limit", "cursor_y",
    HOOK_OPTION))
# tmux's words for a server gone under a command: exiting as the command connected, or gone before it did
SERVER_GONE = (b"server exited unexpectedly", b"no server running", b"error connecting to")
OPEN_ATTEMPTS = 3  # a server gone under the first try is gone for good by the second: a new one starts


@dataclass(frozen=True, slots=True)
class Pane:
    """One look at a pane; ``row`` is the cursor's row counted from the top of the history."""

    id: str
    pid: int
    window: str
    dead: bool
    status: str
    history: int  # rows in the history now
    limit: int  # rows the history keeps; when full, tmux drops the oldest tenth
    row: int
    hook: str = ""  # "await" once the hook found no server to take the turn's end

    @classmethod
    def parse(cls, line: str) -> Pane | None:
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 9 or not fields[0].startswith("%"):
            return None  # tmux answers an unknown pane with empty formats
        pane, pid, window, dead, status, history, limit, cursor, hook = fields
        return cls(pane, int(pid), window, dead == "1", status, int(history), int(limit), int(history) + int(cursor),
                   hook)


@dataclass(slots=True)
class TurnStart:
    """The row where a turn's text begins, found again as output scrolls and tmux trims the history.

    A full history loses its oldest tenth (history_limit // 10 rows) at a
    time. The rows seen at each look tell how many such trims happened, unless
    a burst of output went past in between: then the rows just above the
    start (the anchor) tell which of the possible places is right.
    """

    row: int  # counted from the top of the history
    history: int  # history_size at the last look
    anchor: list[str]  # the rows just above the start row

    def find(self, pane: Pane, rows: list[str]) -> int:
        """The start row's index in rows (the whole history and screen, as they are now)."""
        chunk = max(pane.limit // 10, 1)
        if pane.history < self.history:
            self.row -= chunk * -((pane.history - self.history) // chunk)  # the fewest trims that explain it
        self.history = pane.history
        for row in range(self.row, 0, -chunk):  # the fewest trims first, then more
            if rows[max(row - len(self.anchor), 0):row] == self.anchor[max(len(self.anchor) - row, 0):]:
                self.row = row
                break
        return max(self.row, 0)

    def marker(self, turn: int) -> str:
        return json.dumps({"turn": turn, "row": self.row, "history": self.history, "anchor": self.anchor})

    @classmethod
    def from_marker(cls, text: str, turn: int) -> TurnStart | None:
        """The start the marker records, if it is the one of that turn."""
        try:
            mark = json.loads(text)
            if mark.get("turn") == turn:
                return cls(int(mark["row"]), int(mark["history"]), [str(row) for row in mark["anchor"]])
        except (ValueError, TypeError, KeyError, AttributeError):
            pass  # not ours, or damaged: as if there were none
        return None


def last_line(prompt: str) -> str:
    """The prompt's last line that has words, its spacing made single (as still_typed compares it)."""
    return next((" ".join(line.split()) for line in reversed(prompt.splitlines()) if line.strip()), "")


def still_typed(cursor_line: str, prompt_line: str) -> bool:
    """Whether the cursor's line shows a prompt's last line (last_line) still where it was typed: ending with
    it (after a marker, Claude Code's `❯ `), or being the end of it (a long line the program wrapped itself).
    Spacing does not count: a TUI may draw no-break spaces."""
    shown = " ".join(cursor_line.split())
    return bool(shown and prompt_line) and (shown.endswith(prompt_line) or prompt_line.endswith(shown))


class Tmux:
    """tmux commands on one server: the default one, or a private one (-L socket) for tests."""

    def __init__(self, socket: str | None = None):
        self.argv = ["tmux", "-u", "-L", socket] if socket else ["tmux", "-u"]  # -u: UTF-8 whatever the locale

    async def run(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
        try:
            return await trio.run_process([*self.argv, *args], stdin=stdin, capture_stdout=True,
                                          capture_stderr=True, check=False)
        except OSError as exc:
            return subprocess.CompletedProcess(args, 127, b"", str(exc).encode())

    async def open_window(self, session: str, window: list[str]) -> subprocess.CompletedProcess:
        """new-window in `session`, or new-session the first time; again if the server went away meanwhile.

        Killing a session's last window ends the session and, a moment after the kill returns, the server
        (exit-empty, tmux's default): a restart's new-session that connects in that moment is told "server
        exited unexpectedly", and its new-window then finds no server. The next try starts a new one.
        """
        for _ in range(OPEN_ATTEMPTS):
            result = None
            if (await self.run("has-session", "-t", f"={session}")).returncode != 0:
                result = await self.run("new-session", "-s", session, *window)
            if result is None or result.returncode != 0:  # it existed, or another session's start made it first
                result = await self.run("new-window", "-t", f"={session}:", *window)
            if result.returncode == 0 or not any(words in result.stderr for words in SERVER_GONE):
                break
        return result

    async def pane(self, pane_id: str) -> Pane | None:
        """The pane now, or None if it (or the whole tmux server) is gone."""
        result = await self.run("display-message", "-p", "-t", pane_id, PANE_FORMAT)
        pane = Pane.parse(result.stdout.decode()) if result.returncode == 0 else None
        return pane if pane is not None and pane.id == pane_id else None


def kept_word(pane: Pane) -> Outcome | None:
    """What the word the hook kept in the pane (no server took it) does to the turn this agent follows: the
    same as if the hook had written it to the server in a runner's turn (sessions/turns.py); None if none."""
    if not pane.hook:
        return None
    return turns.decide(turns.Writer.AGENT, turns.Word.of(pane.hook), turns.Phase.RUNNER)


def forget_answer(pane_id: str) -> list[str]:
    """tmux commands that delete the pane's kept answer: set first, since deleting a missing buffer is an
    error that would stop the commands after it."""
    buffer = ANSWER_BUFFER + pane_id
    return ["set-buffer", "-b", buffer, "x", ";", "delete-buffer", "-b", buffer]


def pane_lines(text: str) -> list[str]:
    """capture-pane's rows or lines, without the blank ones at the end."""
    return text.rstrip().split("\n") if text.strip() else []


def write_lines(output: Output, lines: list[str], written: int) -> int:
    """Write lines[written:] (each ending in a newline); return how many are written now."""
    if len(lines) > written:
        output.write("".join(line + "\n" for line in lines[written:]))
        return len(lines)
    return written
