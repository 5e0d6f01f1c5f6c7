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
"""

from __future__ import annotations

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


FORMATS: dict[str, Callable[[Output], OutputReader]] = {
    "text": TextReader,
}


def reader_for(name: str, output: Output) -> OutputReader:
    return FORMATS[name](output)
