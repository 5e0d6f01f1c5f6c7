"""Command tables for ctl files (lib9p's Cmdtab, with usage text).

A ctl file owns a CommandTable; each written line is split into words,
looked up by its first word, checked against the command's arity and
options, and run. Every error names the command; its usage goes with the
error to `agent/errors` (as detail), not into the reply: plain 9P2000
clients keep only 127 bytes, and a verb list with "interrupt" in it would
reach 9pfuse users as EINTR.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import AnvilError, InvalidRequest
from .nodes import Caller
from .quoting import split_words


@dataclass(frozen=True, slots=True)
class Args:
    """A parsed command line: positional words, key=value options, bare flags, and who wrote it.

    A repeatable option's value is the list of every value given.
    """

    words: tuple[str, ...]
    options: dict[str, str | list[str]]
    flags: frozenset[str]
    caller: Caller | None = None


@dataclass(frozen=True, slots=True)
class Command:
    """One ctl command: its words, what it accepts, and what runs it.

    ``run`` returns the text a read on the same fid gives afterwards (for
    example the name of a new session), or None.
    """

    name: str
    run: Callable[[Args], str | None]
    usage: str
    min_words: int = 0
    max_words: int | None = 0
    options: frozenset[str] = field(default_factory=frozenset)
    flags: frozenset[str] = field(default_factory=frozenset)
    repeatable: frozenset[str] = field(default_factory=frozenset)  # options that may be given more than once

    def parse(self, words: list[str], caller: Caller | None = None) -> Args:
        positional, options, flags = [], {}, set()
        for word in words:
            key, eq, value = word.partition("=")
            if eq and key in self.repeatable:
                options.setdefault(key, []).append(value)
            elif eq and key in self.options:
                if key in options:
                    raise self.error(f"{key}= given twice")
                options[key] = value
            elif word in self.flags and len(positional) >= self.min_words:
                flags.add(word)
            else:
                positional.append(word)
        if len(positional) < self.min_words:
            raise self.error(f"needs {self.min_words} argument{'s' if self.min_words != 1 else ''}, got {len(positional)}")
        if self.max_words is not None and len(positional) > self.max_words:
            extra = " ".join(positional[self.max_words:])
            raise self.error(f"unexpected {extra!r}")
        return Args(tuple(positional), options, frozenset(flags), caller)

    def error(self, problem: str) -> InvalidRequest:
        return InvalidRequest(f"{self.name}: {problem}: invalid, see errors for the usage", detail=f"usage: {self.usage}")


class CommandTable:
    """The commands one ctl file understands."""

    def __init__(self, commands: list[Command]):
        self._commands = {c.name: c for c in commands}

    def usage(self) -> str:
        return "; ".join(c.usage for c in self._commands.values())

    def run_line(self, line: str, caller: Caller | None = None) -> str | None:
        words = split_words(line)
        if not words:
            return None
        command = self._commands.get(words[0])
        if command is None:
            raise InvalidRequest(f"unknown command {words[0]!r}: invalid, see errors for the usage",
                                 detail=f"commands: {self.usage()}")
        args = command.parse(words[1:], caller)
        try:
            return command.run(args)
        except AnvilError as exc:
            if exc.message.startswith(command.name + ":"):
                raise
            raise type(exc)(f"{command.name}: {exc.message}", exc.detail) from None

    def run_text(self, text: str, caller: Caller | None = None) -> str | None:
        """Run each line of a write in order; the first failure stops the rest."""
        result = None
        for line in text.split("\n"):  # only newline ends a command (not \v, U+2028, ...)
            line = line.removesuffix("\r")
            if line.strip():
                result = self.run_line(line, caller)
        return result
