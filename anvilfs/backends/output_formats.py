"""How a command backend reads its program's stdout (config `output_format`).

    reader = reader_for(config.output_format, output)
    reader.feed(text)          # stdout, as it comes (decoded, never split inside a character)
    reader.close()             # the program exited: what is left
    reader.failure()           # why the turn failed, as the output says ("" if it does not)

"text" is today's way: stdout is the answer, streamed as it comes. A
structured format (a CLI's JSON events) writes a readable account of the
turn to `stream` (output.write: text and tool calls as they come), hands in
the answer alone (output.answer: `out` stays exactly what the plain output
was), and reports what the turn spent (output.usage). Each format is a
module of its own, registered in FORMATS by name.

A reader may also have (command.py asks with getattr):

    reader.conversation()      # the conversation id the output named ("" if none): for a CLI
                               # that names its conversations there (codex's thread.started)
    reader.memory              # a dict the agent keeps for the next run of its conversation
                               # (saved across server restarts, emptied by clear): for a CLI
                               # that reports running totals (codex)

Line-wise formats share LinesReader (stdout cut into lines, each handed to
line()), JSON-lines ones JsonLinesReader: each line that is a JSON object
handed to event(); a line that is not (garbage, a
line cut short when the CLI was killed) is noted in the transcript and
skipped, never failing the turn by itself; a line longer than MAX_LINE is
dropped with a note, so a reader keeps a bounded part of stdout, never all.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from ..sessions.backend import Output


class OutputReader(Protocol):
    def feed(self, text: str) -> None: ...

    def close(self) -> None: ...

    def failure(self) -> str: ...


class TextReader:
    """stdout is the answer, as it comes."""

    def __init__(self, output: Output):
        self.output = output

    def feed(self, text: str) -> None:
        self.output.write(text)

    def close(self) -> None:
        pass

    def failure(self) -> str:
        return ""


MAX_LINE = 1 << 20  # characters of one line kept at most (1 Mi): a longer one is dropped with a note
SHOWN = 200  # characters of a line that could not be read, quoted in the note


class LinesReader:
    """stdout cut into lines as it comes, each line handed to line(); a line over MAX_LINE is dropped (overlong),
    so no more than MAX_LINE characters of it are ever kept."""

    def __init__(self, output: Output):
        self.output = output
        self._partial: list[str] = []  # the line begun and not ended yet, in pieces (no quadratic joins)
        self._length = 0
        self._dropping = False  # the line being read is over MAX_LINE: skip to its end

    def feed(self, text: str) -> None:
        *ended, rest = text.split("\n")
        for piece in ended:
            self._add(piece)
            self._end_line()
        self._add(rest)

    def close(self) -> None:
        if self._partial or self._dropping:
            self._end_line(last=True)

    def failure(self) -> str:
        return ""

    def line(self, line: str, last: bool) -> None:
        """A whole line (without its newline); last: the output ended without ending it."""
        raise NotImplementedError

    def overlong(self) -> None:
        """A line over MAX_LINE was dropped."""

    def _add(self, piece: str) -> None:
        if self._dropping or not piece:
            return
        if self._length + len(piece) > MAX_LINE:
            self._partial, self._length, self._dropping = [], 0, True
            return
        self._partial.append(piece)
        self._length += len(piece)

    def _end_line(self, last: bool = False) -> None:
        line, dropped = "".join(self._partial), self._dropping
        self._partial, self._length, self._dropping = [], 0, False
        if dropped:
            self.overlong()
        else:
            self.line(line, last)


class JsonLinesReader(LinesReader):
    """A format whose stdout is one JSON object per line; a subclass says what each means (event)."""

    program = "the CLI"  # named in the notes

    def event(self, event: dict) -> None:
        raise NotImplementedError

    def overlong(self) -> None:
        self.output.note(f"a line of {self.program}'s output longer than {MAX_LINE} characters was dropped unread")

    def line(self, line: str, last: bool) -> None:
        if not line.strip():
            return
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            cut = "the output ended in the middle of a line" if last else "a line of the output is no JSON object"
            return self.output.note(f"{self.program}: {cut}, skipped unread: {line[:SHOWN]!r}")
        self.event(event)


def brief(text: str, limit: int = 160) -> str:
    """text as one line of `stream` (a tool call's command or arguments), cut to limit characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _formats() -> dict[str, Callable[[Output], OutputReader]]:
    from .output_aider import AiderReader  # they build on this module
    from .output_claude import ClaudeReader
    from .output_codex import CodexReader
    from .output_gemini import GeminiReader

    return {"text": TextReader, "claude-json": ClaudeReader, "codex-json": CodexReader, "gemini-json": GeminiReader,
            "aider-text": AiderReader}


FORMATS = _formats()


def reader_for(name: str, output: Output) -> OutputReader:
    return FORMATS[name](output)


def names_conversations(name: str) -> bool:
    """Whether the format's output names the conversation (its reader's conversation())."""
    return hasattr(FORMATS[name], "conversation")
