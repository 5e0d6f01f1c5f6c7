#!/usr/bin/env python3
"""Stands in for an agent's terminal UI (Claude Code's input box) in the tmux backend's tests.

It is a real program on a real terminal, typed into by real tmux; only the
agent behind it is left out. Run it in a tmux pane:

    tui_agent.py [--drop all|N[,N...]] [--no-running] [--hold FILE]

It reads its terminal key by key (no echo, no line editing by the
terminal) and draws what is typed after its prompt `tui> `, as a TUI's
input line does. Enter submits the line, except:

    --drop N,...    the Nth Enter (counted from 1 over the program's life;
                    `all`: every one) is lost and the text stays on the
                    line, as Claude Code loses an Enter typed before its
                    input is ready
    an empty line   nothing to submit: the Enter does nothing (Claude Code's
                    too), except as the answer to a question

A submitted line: the hook says `running` (not with --no-running: an agent
whose hooks report only the turn's end), the answer is printed, the hook
says `await`. With --hold FILE the submitted line stays on the cursor's
line until FILE exists (an agent working on it). A line with the word
`edit` first asks `Allow the edit? [Y/n] ` and reads the answer: an Enter
alone chooses the default, yes, as a permission prompt's does.

The hook is $ANVILFS_HOOK (a command line, split by shlex) followed by the
word; without it no hook runs. Each Enter is logged to $TUI_AGENT_LOG (if
set) as it is read, one a line: `dropped`, `empty`, or `taken: LINE`.
"""

from __future__ import annotations

import argparse
import codecs
import os
import shlex
import subprocess
import sys
import time
import tty

PROMPT = "tui> "
QUESTION = "Allow the edit? [Y/n] "


class Terminal:
    def __init__(self, drop: str, log: str | None) -> None:
        self.drop = drop
        self.log = log
        self.enters = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def say(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def read_line(self, prompt: str, *, empty_ok: bool = False) -> str:
        """A line typed after prompt, submitted by an Enter that was not dropped."""
        self.say(prompt)
        line = ""
        while True:
            byte = os.read(0, 1)
            if not byte:
                sys.exit(0)  # the terminal is gone
            key = self.decoder.decode(byte)
            if key not in ("\r", "\n"):
                line += key
                self.say(key)
            elif self._dropped():
                self._record("dropped")
            elif line or empty_ok:
                self._record(f"taken: {line}")
                return line
            else:
                self._record("empty")

    def _dropped(self) -> bool:
        self.enters += 1
        return self.drop == "all" or str(self.enters) in self.drop.split(",")

    def _record(self, what: str) -> None:
        if self.log:
            with open(self.log, "a") as log:
                log.write(what + "\n")


def hook(word: str) -> None:
    command = shlex.split(os.environ.get("ANVILFS_HOOK", ""))
    if command:
        subprocess.run([*command, word], check=False)


def wait_for(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.05)  # the test creates the file; polling is the fake agent's only way to hear it


def answer(terminal: Terminal, line: str, options: argparse.Namespace) -> None:
    if not options.hold:
        terminal.say("\n")  # the input line is left at once, as Claude Code empties its input box
    if not options.no_running:
        hook("running")
    if options.hold:
        wait_for(options.hold)
        terminal.say("\n")
    if "edit" in line.split():
        allowed = terminal.read_line(QUESTION, empty_ok=True).strip().lower() in ("", "y", "yes")
        terminal.say(f"\nthe edit was {'allowed' if allowed else 'refused'}\n")
    terminal.say(f"answer to {line}\n")
    hook("await")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--drop", default="")
    parser.add_argument("--no-running", action="store_true")
    parser.add_argument("--hold", default="")
    options = parser.parse_args()
    tty.setcbreak(0)  # key by key, no echo: the program draws what is typed
    terminal = Terminal(options.drop, os.environ.get("TUI_AGENT_LOG"))
    try:
        while True:
            answer(terminal, terminal.read_line(PROMPT), options)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
