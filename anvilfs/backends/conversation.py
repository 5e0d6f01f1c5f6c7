"""Learning the id a CLI gave the conversation a turn began, for backends that choose it themselves.

    conversation_pattern = 'session id: ([0-9a-f-]{36})'   # searched in the turn's stderr, or
    conversation_argv = ["llm", "logs", "list", "--json", "-n", "1"]   # in this command's stdout

claude takes an id from us (--session-id); llm and codex make their own.
When the id is looked up by a command after the turn ("the latest
conversation"), another turn of the same backend ending meanwhile would
answer for it, so such a turn runs alone among that backend's turns
(TurnGate); with the id in the turn's own stderr, nothing waits.
"""

from __future__ import annotations

import os
import re
from contextlib import asynccontextmanager

import trio

from ..waitable import Changes

LOOKUP_TIMEOUT = 30.0  # seconds conversation_argv may take


class TurnGate:
    """The turns of one backend: any number together, or one alone (and then it goes first)."""

    def __init__(self) -> None:
        self._running = 0
        self._alone = False
        self._waiting_alone = 0
        self._changes = Changes()

    @asynccontextmanager
    async def together(self):
        while self._alone or self._waiting_alone:
            await self._changes.wait_changed(self._changes.version)
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            self._changes.bump()

    @asynccontextmanager
    async def alone(self):
        self._waiting_alone += 1
        try:
            while self._alone or self._running:
                await self._changes.wait_changed(self._changes.version)
        finally:
            self._waiting_alone -= 1
            self._changes.bump()  # a cancelled wait lets the others on
        self._alone = True
        try:
            yield
        finally:
            self._alone = False
            self._changes.bump()


async def look_up(argv: list[str], pattern: str, *, cwd: str, env: dict[str, str]) -> str:
    """The id conversation_argv's output gives; ValueError says why there is none."""
    try:
        with trio.fail_after(LOOKUP_TIMEOUT):
            result = await trio.run_process(argv, cwd=cwd, env={**os.environ, **env}, capture_stdout=True,
                                            capture_stderr=True, check=False, stdin=b"")
    except trio.TooSlowError:
        raise ValueError(f"{argv[0]} (conversation_argv) took over {LOOKUP_TIMEOUT:g} s") from None
    except OSError as exc:
        raise ValueError(f"cannot run {argv[0]} (conversation_argv): {exc.strerror or exc}") from None
    if result.returncode != 0:
        why = result.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise ValueError(f"{argv[0]} (conversation_argv) exited with status {result.returncode} {why[0]}".rstrip())
    return found_in(result.stdout.decode(errors="replace"), pattern, f"the output of {argv[0]} (conversation_argv)")


def found_in(text: str, pattern: str, where: str) -> str:
    """The id in text (the pattern's first group, else its whole match); ValueError if it is not there."""
    match = re.search(pattern, text)
    if match is None:
        raise ValueError(f"{where} has no match for conversation_pattern {pattern!r}")
    return match.group(1 if match.re.groups else 0)
