"""`anvilfs hook running|await`: an agent's hook reports its turn, and hands in the answer at its end.

    anvilfs hook running   write `running` to $ANVILFS_SESSION/status
    anvilfs hook await     the turn's answer, from the hook's input on stdin, is written to
                           $ANVILFS_SESSION/out (as uname $ANVILFS_SESSION): the session takes it as
                           the running turn's answer and ends the turn. With no answer in the input,
                           or one the server refused, `await` is written to status instead, and the
                           turn's answer is the text of the agent's pane.

The input is the JSON Claude Code gives its Stop hook: `last_assistant_message`,
else the last assistant text in the transcript at `transcript_path` (after
its last prompt, in its last TRANSCRIPT_TAIL bytes, of a regular file only).
Other agents' hooks, whose input is not that (or a terminal, or nothing),
end the turn with `await` alone.
Before either, it waits up to TRANSCRIPT_SETTLE seconds for the transcript to
show the turn's last message (settle): Claude Code may run the Stop hook
first, and the server reads what the turn spent from there as the answer
comes (backends/claude_transcript.py). It may run it before even the turn's
prompt is there, and then the transcript's last answer is the previous
turn's: settle waits for last_assistant_message's text, where the input has
it (the pinned 2.1.332 does), and for any answer where it has not (an older
Claude Code, whose answer may then be the previous turn's in that case).

No `await` follows an answer the server took: the answer ended the turn, and a
second word could arrive after the next prompt was typed and end that turn.
Nor one that the server refused as no running turn's (its turn is over, or
the turn running now has not said `running` yet: this answer is a late one of
an earlier turn, sessions/owned.py).

Before it connects, inside tmux, the answer is kept in the tmux buffer
anvilfs-answer-$TMUX_PANE: should no server take it for good (none answers,
one restarting; or it took the answer but could not save it, EIO "not on
disk"), the hook's script leaves `await` in the pane (hooks/anvilfs-status)
and the next server, adopting the agent, takes the answer from there
(backends/tmux.py). An answer the server took for good, or refused, is
deleted from there: a late one it refused must not be taken later as the
answer of the turn running now.
Exit status 0 when the server took the word (or the answer), 3 when it
refused it (it is there, and said why on stderr), 1 when no server answered
or it could not save what it took: only then does the script keep the word
in the pane, where a refused one could end the turn that comes next. Which
outcome of the server's table (sessions/turns.py) each of these is, is
written there.
"""

from __future__ import annotations

import os
import sys

# The texts shared with the server (hookwords.py imports nothing): the words, where backends/tmux.py looks for a
# kept answer, the refusal of an answer that is no running turn's (turns.py's NO_TURN and LATE), and the exit
# statuses hooks/anvilfs-status acts on: EXIT_KEEP as when no server answers (the word is kept in the pane for a
# next server), EXIT_REFUSED when the server answered and refused it (nothing kept)
from ..hookwords import ANSWER_BUFFER, EXIT_KEEP, EXIT_REFUSED, NO_TURN
from ..hookwords import HOOK_WORDS as WORDS
from .client import Client, ServerError
from .commands import CommandError

NOT_SAVED = "not saved: the disk refused it"  # the server's EIO when a write's change was refused (waitable.on_disk)
INPUT_WAIT = 5.0  # seconds the hook's input may take to end (Claude Code writes it at once and closes it)
INPUT_MOST = 16 << 20  # bytes of the hook's input at most: more is no hook's input (`< /dev/zero` would fill memory)
TRANSCRIPT_TAIL = 8 << 20  # bytes of the transcript read, from its end: a long session's is large
TRANSCRIPT_SETTLE = 3.0  # seconds the transcript may take to show the turn's last message, at await
TRANSCRIPT_POLL = 0.05


def _hook_args(p) -> None:
    p.add_argument("word", choices=WORDS, metavar="running|await",
                   help="the turn began (running) or ended (await: the answer is read from stdin)")
    p.set_defaults(before_connecting=take_input)


PARSERS = {
    "hook": ("report the turn of the agent of $ANVILFS_SESSION; at await, hand in its answer",
             "Run by an agent's hook (hooks/anvilfs-status). The answer comes from the hook's JSON input "
             "(Claude Code's last_assistant_message or transcript_path); without one, the turn ends with the "
             "text of the agent's tmux pane.",
             ["anvilfs hook running", "anvilfs hook await < stop-hook-input.json"], _hook_args),
}


def take_input(args) -> None:
    """Before connecting: the session, and (at await) the answer, kept in tmux in case no server answers."""
    args.session = os.environ.get("ANVILFS_SESSION", "")
    if not args.session:
        raise CommandError("hook: ANVILFS_SESSION is not set: `anvilfs hook` is run by the hook of an agent that "
                           "anvilfs started, which sets it to the session's name")
    args.answer = ""
    if args.word == "await":
        event = _event(read_input(sys.stdin))
        settle(event)
        args.answer = _answer(event)
    args.pane = os.environ.get("TMUX_PANE", "")
    if args.answer and args.pane:
        keep(args.answer, args.pane)


def hook(client: Client, root: str, args) -> int:
    where = f"{root.strip('/')}/{args.session}".lstrip("/")
    status = _hand_in(client, where, args) if args.answer else None
    if args.answer and args.pane and status != EXIT_KEEP:
        forget(args.pane)  # the server took the answer for good, or refused it: it is for no next server
    return status if status is not None else _report(client, where, args.word)


def _hand_in(client: Client, where: str, args) -> int | None:
    """Write the answer to out: the exit status, or None when `await` is to end the turn instead."""
    try:
        client.write_file(f"{where}/out", args.answer.encode())
        return 0  # the answer ended the turn
    except ServerError as exc:
        if NOT_SAVED in str(exc):  # taken, but a server restarted now would not know it: kept for the next
            print(f"anvilfs: hook: {where}/out: {exc}; the answer is kept for the next server", file=sys.stderr)
            return EXIT_KEEP
        if NO_TURN in str(exc):  # its turn is over (interrupted, stopped): an await now could end the next
            print(f"anvilfs: hook: {where}/out refused the answer: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        print(f"anvilfs: hook: {where}/out refused the answer ({exc}); ending the turn with await, whose "
              "answer is the agent's pane", file=sys.stderr)
    return None


def _report(client: Client, where: str, word: str) -> int:
    try:
        client.write_file(f"{where}/status", f"{word}\n".encode())
    except ServerError as exc:
        print(f"anvilfs: hook: {where}/status: {exc}", file=sys.stderr)
        return EXIT_KEEP if NOT_SAVED in str(exc) else EXIT_REFUSED
    return 0


COMMANDS = {"hook": hook}


def read_input(stream) -> bytes:
    """The hook's input: all of it once it ends, or b"" for a terminal, or an input that does not end in time or
    within INPUT_MOST bytes."""
    import select  # noqa: PLC0415 - here: every client command imports this module, few of them read a hook's input
    import time  # noqa: PLC0415

    if stream.isatty():
        return b""  # a person trying the command: nothing to wait for
    fd, data = stream.fileno(), bytearray()
    deadline = time.monotonic() + INPUT_WAIT
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > INPUT_MOST:
            break
    return b""  # never ended, or too long: not a hook's input to read


def answer_of(data: bytes) -> str:
    """The turn's answer in a hook's JSON input, ending in a newline; "" if it has none."""
    return _answer(_event(data))


def _event(data: bytes) -> dict:
    from .. import boundedjson  # noqa: PLC0415 - as in read_input

    try:
        event = boundedjson.loads(data, most=None)
    except ValueError:
        return {}
    return event if isinstance(event, dict) else {}


def _answer(event: dict) -> str:
    answer = event.get("last_assistant_message")
    if not (isinstance(answer, str) and answer.strip()):
        answer = transcript_answer(_transcript(event))
    return answer if not answer or answer.endswith("\n") else answer + "\n"


def _transcript(event: dict) -> str:
    path = event.get("transcript_path")
    return path if isinstance(path, str) else ""


def settle(event: dict) -> None:
    """Wait, up to TRANSCRIPT_SETTLE seconds, for the transcript to show the turn's end (its last message).

    Claude Code may run the Stop hook before it has written the turn's last message there, and the server
    reads what the turn spent from it when the answer comes (backends/claude_transcript.py). Nor may this
    turn's prompt be there yet, and then the transcript's last answer is the previous turn's: with the
    input's last_assistant_message (Claude Code 2.1.332 takes its last assistant entry's text blocks,
    joined by newlines and trimmed; an entry may be one block of a message, as in the transcript), the
    transcript's answer (every text block of the last message, joined so) must be that text or end with
    it as its last block; without it, any end will do. An answer that ends the previous turn's as a
    whole block still passes at once (a turn answering "Done." twice): then, as before, the server
    notes that the turn was counted in part."""
    import time  # noqa: PLC0415 - as in read_input

    path = _transcript(event)
    expected = event.get("last_assistant_message")
    expected = expected.strip() if isinstance(expected, str) else ""

    def shown() -> bool:
        answer = transcript_answer(path).strip()
        return (answer == expected or answer.endswith("\n" + expected)) if expected and answer else bool(answer)

    deadline = time.monotonic() + TRANSCRIPT_SETTLE
    while path and not shown() and time.monotonic() < deadline:
        time.sleep(TRANSCRIPT_POLL)


def transcript_answer(path: str) -> str:
    """The text of the last assistant message after the last prompt in a Claude Code transcript (JSONL)."""
    from .. import boundedjson  # noqa: PLC0415

    message_id, texts, at_end = None, [], False
    for line in _tail_lines(path):
        try:
            entry = boundedjson.loads(line, most=None)  # ValueError too for a line too deep for json.loads
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) and not entry.get("isSidechain") else None
        if not isinstance(message, dict) or entry.get("isMeta"):
            continue
        if entry.get("type") == "user":
            if _is_prompt(message.get("content")):
                message_id, texts = None, []  # a new turn: what was said before is not its answer
            else:
                at_end = False  # a tool's result: the model has more to say after it
        elif entry.get("type") == "assistant":
            if message.get("id") is None or message.get("id") != message_id:
                message_id, texts = message.get("id"), []
            if text := _text(message.get("content")):
                texts.append(text)  # one message may be written as several lines, a block each
            at_end = not _calls_a_tool(message.get("content"))
    # Claude Code may run the Stop hook before the turn's last message is in the transcript: text that a
    # tool call or its result follows is the middle of the turn, not its answer (then the pane's text is)
    return "\n".join(texts) if at_end else ""


def _tail_lines(path: str) -> list[bytes]:
    """The lines of the last TRANSCRIPT_TAIL bytes of a regular file; none of anything else.

    The path comes from the hook's input: a FIFO would hold the hook in open() until a writer came (so
    O_NONBLOCK), and a device such as /dev/zero has no end to seek to and never ends a read.
    """
    import stat  # noqa: PLC0415 - as in read_input

    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY), "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return []
            size = f.seek(0, os.SEEK_END)
            f.seek(max(size - TRANSCRIPT_TAIL, 0))
            data = f.read(TRANSCRIPT_TAIL)  # and no more should it grow meanwhile
    except OSError:
        return []
    lines = data.split(b"\n")
    return lines[1:] if size > TRANSCRIPT_TAIL else lines  # the first may be cut


def _is_prompt(content) -> bool:
    """A user entry that is a prompt, not a tool's result."""
    return isinstance(content, str) or (isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "text" for block in content))


def _calls_a_tool(content) -> bool:
    return isinstance(content, list) and any(isinstance(block, dict) and block.get("type") == "tool_use"
                                             for block in content)


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(block["text"] for block in content
                     if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
                     and block["text"])


def keep(answer: str, pane: str) -> None:
    """Keep the answer in the tmux buffer the next server looks in (best effort: the server may take it anyway)."""
    _tmux(["load-buffer", "-b", ANSWER_BUFFER + pane, "-"], answer.encode())


def forget(pane: str) -> None:
    """Delete the kept answer (best effort: the next turn's start deletes it too, backends/tmux.py)."""
    _tmux(["delete-buffer", "-b", ANSWER_BUFFER + pane])


def _tmux(args: list[str], data: bytes = b"") -> None:
    import subprocess  # noqa: PLC0415 - as in read_input

    try:
        subprocess.run(["tmux", *args], input=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5,
                       check=False)
    except (OSError, subprocess.SubprocessError):
        pass  # no tmux here: the pane's text is the answer then
