"""What a turn of Claude Code in tmux spent, from its transcript (tmux config `usage = "claude-transcript"`).

Claude Code keeps each conversation in CONFIG/projects/<its cwd, mangled>/<conversation id>.jsonl
(CONFIG: $CLAUDE_CONFIG_DIR, else ~/.claude, in the agent's environment). Every assistant line has
`message.usage` with the request's final figures; one request is written as a line per content block,
each with the same message.id and usage, so each id counts once. A turn's lines are those appended
after its prompt was typed (the transcript's size then: TurnSpending's start), so no earlier turn counts.

The turn's part is read as it grows, a bounded piece at each look the agent takes at its pane, and the
rest when the turn ends: at the hook's answer or `await`, before the session ends the turn (an answer
handed in through `out` ends it at once), or when the agent stops following the pane. The Stop hook may
run before the turn's last message is in the transcript (about one turn in five against the stub):
`anvilfs hook await` waits a little for it (client/hook.py settle), and a turn whose last assistant
message still stopped for a tool call, or that has none, is noted as counted in part.

The transcript has no cost: cost_usd is unknown (None). A turn followed after a server restart
(adopted) reports nothing: where it began in the transcript was not kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..sessions.backend import Output
from ..usage import Usage
from .output_claude import api_tokens

LOOK_MOST = 1 << 20  # bytes read at one look during the turn: each look is quick, in the server's loop
END_MOST = 16 << 20  # bytes read at most when the turn ends: more is noted, not counted
MAX_LINE = 16 << 20  # a longer line is skipped (an assistant line is one block: a tool call writing a file)


def transcript_dir(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its projects' conversations, in the environment it runs with."""
    return Path(env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", ""), ".claude"), "projects")


class TurnSpending:
    """The requests of one turn, read from its conversation's transcript as it grows."""

    def __init__(self, projects: Path, conversation: str):
        self.projects, self.conversation = projects, conversation
        self._path: Path | None = None
        self._offset = 0
        self._partial, self._skipping = bytearray(), False
        self._requests: dict[str, dict] = {}  # each request's usage, by its message id
        self._last_stop: str | None = None  # the stop_reason of the turn's last assistant line
        self._trouble: list[str] = []
        self._offset = self._size()  # before the prompt is typed: the turn's lines come after this

    def look(self, most: int = LOOK_MOST) -> bool:
        """Read up to `most` new bytes; True if the transcript's end was reached."""
        path = self._find()
        if path is None:
            return True
        try:
            with open(path, "rb") as f:
                f.seek(self._offset)
                data = f.read(most)
                at_end = not f.read(1)
        except OSError as exc:
            self._trouble.append(f"claude's transcript {path}: {exc.strerror or exc}")
            return True
        self._offset += len(data)
        self._take(data)
        return at_end

    def report(self, output: Output) -> None:
        """The rest read, the turn's usage reported (once), with notes on what could not be counted."""
        at_end = self.look(END_MOST)
        if self._find() is None:
            return output.note(f"no transcript of conversation {self.conversation} in {self.projects}: what the turn "
                               "spent is unknown")
        for note in self._trouble:
            output.note(note)
        if not at_end:
            output.note(f"claude's transcript had more than {END_MOST} bytes left when the turn ended: "
                        "the requests in them are not counted")
        elif self._last_stop in (None, "tool_use"):
            output.note(f"claude's transcript did not show this turn's last message when the turn ended: its usage "
                        f"counts the {len(self._requests)} request(s) it showed")
        try:
            usage = Usage(**api_tokens(self._requests.values()))
        except ValueError as exc:
            output.note(f"claude's transcript: cannot read a request's usage: {exc}")
            usage = Usage()
        output.usage(usage)

    def _find(self) -> Path | None:
        """The conversation's file: its id is a UUID, so the one project that has it is its cwd's."""
        if self._path is None and self.conversation:
            found = sorted(self.projects.glob(f"*/{self.conversation}.jsonl"))
            self._path = found[0] if found else None
        return self._path

    def _size(self) -> int:
        path = self._find()
        try:
            return path.stat().st_size if path else 0
        except OSError:
            return 0

    def _take(self, data: bytes) -> None:
        """Whole lines to _line; a line over MAX_LINE is skipped, so at most that much is kept of one."""
        *ended, rest = data.split(b"\n")
        for piece in ended:
            if not self._skipping and len(self._partial) + len(piece) <= MAX_LINE:
                self._partial += piece
                self._line(bytes(self._partial))
            elif not self._skipping:
                self._skip()
            self._partial.clear()
            self._skipping = False
        if not self._skipping:
            self._partial += rest
            if len(self._partial) > MAX_LINE:
                self._partial.clear()
                self._skip()
                self._skipping = True

    def _skip(self) -> None:
        self._trouble.append(f"a line of claude's transcript over {MAX_LINE} bytes was skipped unread")

    def _line(self, line: bytes) -> None:
        if b'"type":"assistant"' not in line:  # most lines are not the model's (prompts, tool results, blobs)
            return
        try:
            entry = json.loads(line)
        except ValueError:
            return self._trouble.append(f"a line of claude's transcript is no JSON: {line[:200]!r}")
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
        if not isinstance(message, dict):
            return
        if isinstance(message.get("usage"), dict):
            self._requests[str(message.get("id") or len(self._requests))] = message["usage"]
        self._last_stop = message.get("stop_reason")
