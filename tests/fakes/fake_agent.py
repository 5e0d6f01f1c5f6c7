#!/usr/bin/env python3
"""A fake coding agent for tests; it behaves like `claude -p` and says it is fake.

    fake_agent.py [-p] [--permission-mode M] [--session-id ID | --resume ID] [--prompt TEXT] [--model M]
                  [--output-format stream-json --verbose --include-partial-messages] [--max-budget-usd USD]
    fake_agent.py --interactive [--session-id ID]

With --output-format stream-json (the built-in claude's), what it says goes out as claude's stream-json
events: an `assistant` event per piece, then a `result` event with the whole answer (no usage: a fake
spends nothing).

The prompt comes from --prompt or stdin. Conversations live in
$FAKE_AGENT_STATE (default: $TMPDIR/fake-agent-state), one file per id,
and, like claude, --session-id refuses an id already used and --resume
refuses one never started. The answer names "conversation ID turn N".

Directives anywhere in the prompt:
    fake:fail   message on stderr, exit 3
    fake:hang   say so, then sleep until killed
    fake:family like hang, with a child process in the same group (prints its pid)
    fake:crash  SIGKILL itself
    fake:slow   the answer in pieces 0.2 s apart; with $FAKE_AGENT_GATE set,
                wait after the first piece until that file exists
    fake:spin   fake:slow, printing a dot every 0.1 s while it waits at the
                gate (as an agent's spinner does: its pane is never quiet)
    fake:env    print ANVILFS_SESSION, FAKE_AGENT_STATE and the cwd
    fake:utf8   print "x" then "é" * 5000, written in odd-sized byte pieces

--interactive: print a prompt marker, answer each line read from the
terminal; if $ANVILFS_HOOK is set, run `$ANVILFS_HOOK running` before and
`$ANVILFS_HOOK await` after each answer. Ctrl-C cancels the answer being
given (no await then) and waits for the next line. `/quit` or EOF ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

MARKER = "fake> "
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


_said: list[str] | None = None  # with --output-format stream-json: everything said, for the result event


def say(text: str) -> None:
    if _said is not None:
        _said.append(text)
        text = json.dumps({"type": "assistant", "message": {"id": "fake", "content": [{"type": "text",
                                                                                       "text": text}]}}) + "\n"
    sys.stdout.write(text)
    sys.stdout.flush()


def fail(text: str, status: int) -> None:
    sys.stderr.write(f"[fake agent] {text}\n")
    sys.stderr.flush()
    sys.exit(status)


def state_dir() -> str:
    path = os.environ.get("FAKE_AGENT_STATE") or os.path.join(tempfile.gettempdir(), "fake-agent-state")
    os.makedirs(path, exist_ok=True)
    return path


def next_turn(conversation: str, new: bool) -> int:
    """Count one more run of the conversation; claude's rules for new and resumed ids."""
    if not _ID.match(conversation):
        fail(f"bad conversation id {conversation!r}", 2)
    path = os.path.join(state_dir(), conversation + ".turns")
    exists = os.path.exists(path)
    if new and exists:
        fail(f"session id {conversation} is already in use", 1)
    if not new and not exists:
        fail(f"no conversation found with session id {conversation}", 1)
    with open(path, "a+") as f:
        f.seek(0)
        turn = int(f.read() or 0) + 1
        f.seek(0)
        f.truncate()
        f.write(str(turn))
    return turn


def act(prompt: str) -> None:
    """Directives that end or stall the run before any answer."""
    if "fake:fail" in prompt:
        fail("failing because the prompt said fake:fail", 3)
    if "fake:crash" in prompt:
        os.kill(os.getpid(), signal.SIGKILL)
    if "fake:family" in prompt:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        say(f"[fake agent] child {child.pid}\n")
    if "fake:hang" in prompt or "fake:family" in prompt:
        say("[fake agent] hanging until killed\n")
        while True:
            time.sleep(3600)


def answer(prompt: str, conversation: str, turn: int) -> None:
    act(prompt)
    if "fake:env" in prompt:
        for name in ("ANVILFS_SESSION", "FAKE_AGENT_STATE"):
            say(f"{name}={os.environ.get(name, '')}\n")
        say(f"cwd={os.getcwd()}\n")
    if "fake:utf8" in prompt:
        data = ("x" + "é" * 5000).encode()
        for i in range(0, len(data), 999):  # odd sizes: most pieces end mid-character
            sys.stdout.buffer.write(data[i : i + 999])
            sys.stdout.flush()
            time.sleep(0.01)
        say("\n")
    first = prompt.strip().splitlines()[0] if prompt.strip() else ""
    pieces = [
        f"[fake agent] conversation {conversation} turn {turn}: ",
        "this answer comes from tests/fakes/fake_agent.py, not from a model.\n",
        f"You wrote {len(prompt.encode())} bytes; the first line was: {first}\n",
    ]
    spin = "fake:spin" in prompt
    slow = "fake:slow" in prompt or spin
    for number, piece in enumerate(pieces):
        if slow and number:
            time.sleep(0.2)
        say(piece)
        if slow and number == 0:
            wait_for_gate(spin)


def wait_for_gate(spin: bool = False) -> None:
    gate = os.environ.get("FAKE_AGENT_GATE")
    while gate and not os.path.exists(gate):
        if spin:
            say(".")
        time.sleep(0.1 if spin else 0.01)


def hook(word: str) -> None:
    command = os.environ.get("ANVILFS_HOOK")
    if command:
        subprocess.run([*shlex.split(command), word], check=False)


def interactive(conversation: str) -> None:
    turn = 0
    while True:
        say(MARKER)
        line = sys.stdin.readline()
        if not line or line.strip() == "/quit":
            return
        turn += 1
        hook("running")
        try:
            if "fake:fail" in line:
                sys.stderr.write("[fake agent] failing because the prompt said fake:fail\n")
            else:
                answer(line, conversation, turn)
        except KeyboardInterrupt:  # Ctrl-C cancels the answer, as in claude; no await hook then
            say("\n[fake agent] interrupted\n")
            continue
        hook("await")


def main() -> None:
    parser = argparse.ArgumentParser(description="a fake coding agent for anvilfs tests")
    parser.add_argument("-p", "--print", action="store_true", help="ignored (claude compatibility)")
    parser.add_argument("--permission-mode", help="ignored (claude compatibility: the built-in claude gives it)")
    # the built-in claude's tools (backends/tools_claude.py): a fake has no model to offer them to
    for flag in ("--mcp-config", "--allowedTools", "--append-system-prompt"):
        parser.add_argument(flag, help="ignored (claude compatibility: anvilfs's tools)")
    parser.add_argument("--session-id")
    parser.add_argument("--resume")
    parser.add_argument("--prompt")
    parser.add_argument("--model", default="")
    parser.add_argument("--interactive", action="store_true")
    parser.add_argument("--output-format", choices=("text", "stream-json"), default="text")
    for flag in ("--verbose", "--include-partial-messages"):
        parser.add_argument(flag, action="store_true", help="ignored (claude compatibility: stream-json's)")
    parser.add_argument("--max-budget-usd", help="ignored (claude compatibility: a fake spends nothing)")
    args = parser.parse_args()
    global _said
    if args.output_format == "stream-json" and not args.interactive:
        _said = []
    if args.interactive:
        interactive(args.session_id or args.resume or "-")
        return
    prompt = args.prompt if args.prompt is not None else sys.stdin.read()
    conversation = args.session_id or args.resume
    turn = next_turn(conversation, new=args.resume is None) if conversation else 1
    if args.model:
        say(f"[fake agent] model {args.model}\n")
    answer(prompt, conversation or "-", turn)
    if _said is not None:
        sys.stdout.write(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                                     "result": "".join(_said)}) + "\n")


if __name__ == "__main__":
    main()
