"""`anvilfs hook` (anvilfs/client/hook.py): the answer found in a hook's input, and what is written where.

The input is what Claude Code 2.1.332 gives its Stop hook (seen in tests/agents/test_claude_tmux.py's runs);
the transcript lines are in the shape of its JSONL transcripts. The command's writes go to a recording
stand-in for the client; the real one, against a real server, is in the agents' and the tmux tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from anvilfs.backends import tmux as tmux_backend
from anvilfs.cli import main
from anvilfs.client import ServerError, hook
from anvilfs.ninep.errstr import word_for_9p2000

STOP = {"session_id": "1111", "transcript_path": "", "cwd": "/w", "hook_event_name": "Stop",
        "stop_hook_active": False, "last_assistant_message": "All done.", "background_tasks": []}


def entry(kind: str, content, message_id: str | None = None, sidechain: bool = False) -> str:
    message = {"role": kind, "content": content, **({"id": message_id} if message_id else {})}
    return json.dumps({"type": kind, "message": message, "isSidechain": sidechain})


def transcript(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_the_answer_is_last_assistant_message_with_a_newline():
    assert hook.answer_of(json.dumps(STOP).encode()) == "All done.\n"
    assert hook.answer_of(json.dumps(STOP | {"last_assistant_message": "two\nlines\n"}).encode()) == "two\nlines\n"


@pytest.mark.parametrize("data", [b"", b"not json", b"[1, 2]", b'"text"', json.dumps({"hook_event_name": "Stop"}).encode(),
                                  json.dumps(STOP | {"last_assistant_message": 7}).encode()])
def test_an_input_without_an_answer_gives_none(data):
    assert hook.answer_of(data) == ""


def test_without_last_assistant_message_the_transcript_gives_the_last_assistant_text(tmp_path):
    path = transcript(
        tmp_path,
        entry("user", "first prompt"),
        entry("assistant", [{"type": "text", "text": "first answer"}], "m1"),
        entry("user", "fix the test"),
        entry("assistant", [{"type": "text", "text": "Let me look."}], "m2"),
        entry("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}], "m2"),
        entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),  # not a prompt
        entry("assistant", [{"type": "text", "text": "Fixed."}], "m3"),
        entry("assistant", [{"type": "text", "text": "The test passes."}], "m3"),  # the same message, a block a line
        entry("assistant", [{"type": "text", "text": "a subagent's words"}], "m4", sidechain=True),
        json.dumps({"type": "system", "subtype": "stop_hook_summary"}),
        "{broken",
    )
    stop = json.dumps(STOP | {"transcript_path": path, "last_assistant_message": ""}).encode()
    assert hook.answer_of(stop) == "Fixed.\nThe test passes.\n"
    assert hook.answer_of(json.dumps({"transcript_path": path}).encode()) == "Fixed.\nThe test passes.\n"


@pytest.mark.parametrize("last", [
    entry("assistant", [{"type": "text", "text": "Let me look."}, {"type": "tool_use", "id": "t1", "name": "Bash",
                                                                   "input": {}}], "m2"),
    entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
], ids=["a tool call last", "a tool's result last"])
def test_a_transcript_in_the_middle_of_its_turn_gives_no_answer(tmp_path, last):
    """Claude Code may run the Stop hook before the turn's last message is written: no half answer then."""
    path = transcript(tmp_path, entry("user", "fix the test"),
                      entry("assistant", [{"type": "text", "text": "Let me look."}], "m2"), last)
    assert hook.transcript_answer(path) == ""


def test_await_waits_for_the_transcript_to_show_the_turns_last_message(tmp_path, monkeypatch):
    """The server reads what the turn spent from the transcript when the answer comes: the hook gives Claude
    Code the time to write the last message there, polling until it is in (or TRANSCRIPT_SETTLE passes)."""
    path = transcript(tmp_path, entry("user", "fix the test"),
                      entry("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}], "m1"))
    polls = []

    def written_meanwhile(seconds):  # Claude Code writes the last message while the hook waits
        polls.append(seconds)
        with open(path, "a") as f:
            f.write(entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]) + "\n")
            f.write(entry("assistant", [{"type": "text", "text": "Fixed."}], "m2") + "\n")

    monkeypatch.setattr("time.sleep", written_meanwhile)
    stop = STOP | {"transcript_path": path, "last_assistant_message": "Fixed."}
    hook.settle(stop)
    assert polls == [hook.TRANSCRIPT_POLL], "it looked again once, and found the turn's end"
    hook.settle(stop)
    assert len(polls) == 1, "a transcript that shows the end is not waited for"
    hook.settle(stop | {"last_assistant_message": ""})
    assert len(polls) == 1, "without the input's text, any end of a turn will do"
    monkeypatch.setattr(hook, "TRANSCRIPT_SETTLE", 0)
    hook.settle(STOP | {"transcript_path": transcript(tmp_path, entry("user", "never answered"))})
    assert len(polls) == 1, "past TRANSCRIPT_SETTLE it waits no more"


def test_await_waits_for_this_turns_message_not_the_previous_turns_answer(tmp_path, monkeypatch):
    """Claude Code may run the Stop hook before even the turn's prompt is in the transcript, which then ends
    with the previous turn's whole answer: the hook waits until the transcript shows last_assistant_message
    (a CI run's turn was counted with none of its requests when it did not)."""
    path = transcript(tmp_path, entry("user", "read the notes"),
                      entry("assistant", [{"type": "text", "text": "tool done"}], "m1"))
    polls = []

    def written_meanwhile(seconds):  # this turn's prompt and answer, a text block a line
        polls.append(seconds)
        with open(path, "a") as f:
            f.write(entry("user", "and again") + "\n")
            f.write(entry("assistant", [{"type": "text", "text": "turn 2:"}], "m2") + "\n")
            f.write(entry("assistant", [{"type": "text", "text": "you said and again"}], "m2") + "\n")

    monkeypatch.setattr("time.sleep", written_meanwhile)
    hook.settle(STOP | {"transcript_path": path, "last_assistant_message": "turn 2:\nyou said and again\n"})
    assert polls == [hook.TRANSCRIPT_POLL], "it looked again once, and found this turn's message"
    hook.settle(STOP | {"transcript_path": path, "last_assistant_message": " turn 2:\nyou said and again"})
    assert len(polls) == 1, "the message shown is not waited for (both texts trimmed, as Claude Code trims)"
    hook.settle(STOP | {"transcript_path": path, "last_assistant_message": "you said and again"})
    assert len(polls) == 1, "nor is it when the input has the message's last block alone"

    class Waited(Exception):
        pass

    def waits(seconds):
        raise Waited

    monkeypatch.setattr("time.sleep", waits)
    with pytest.raises(Waited):  # the previous answer "Not done." is no sign of this one, "done."
        hook.settle(STOP | {"transcript_path": path, "last_assistant_message": "again"})
    monkeypatch.setattr(hook, "TRANSCRIPT_SETTLE", 0)
    hook.settle(STOP | {"transcript_path": path, "last_assistant_message": "never written"})  # no Waited
    assert len(polls) == 1, "past TRANSCRIPT_SETTLE it waits no more"


def test_an_earlier_turns_answer_is_never_this_ones(tmp_path):
    """The transcript not written up to the end of this turn yet: nothing, rather than the last turn's answer."""
    path = transcript(tmp_path, entry("user", "one"), entry("assistant", [{"type": "text", "text": "answer one"}], "m1"),
                      entry("user", [{"type": "text", "text": "two"}]))
    assert hook.transcript_answer(path) == ""
    assert hook.transcript_answer(str(tmp_path / "missing.jsonl")) == ""


def test_a_long_transcript_is_read_from_its_tail(tmp_path, monkeypatch):
    last = [entry("user", "now"), entry("assistant", [{"type": "text", "text": "the end"}], "m9")]
    path = transcript(tmp_path, entry("user", "x" * 5000), *last)
    monkeypatch.setattr(hook, "TRANSCRIPT_TAIL", sum(len(line) + 1 for line in last) + 10)  # cuts the first line
    assert hook.transcript_answer(path) == "the end"


def test_the_input_is_read_to_its_end_and_never_waited_for_past_input_wait(monkeypatch):
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stream:
        os.write(write, b'{"last_assistant_message": "hi"}')
        os.close(write)
        assert hook.read_input(stream) == b'{"last_assistant_message": "hi"}'
    monkeypatch.setattr(hook, "INPUT_WAIT", 0.2)
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stream:
        os.write(write, b'{"last_assistant')  # and never closed: no hook's input
        assert hook.read_input(stream) == b""
    os.close(write)


class Recorder:
    """A client that records writes; refuses those to the files in `refuse`."""

    def __init__(self, refuse: dict[str, str] | None = None) -> None:
        self.writes: list[tuple[str, bytes]] = []
        self.refuse = refuse or {}

    def write_file(self, path: str, data: bytes) -> None:
        if path.rsplit("/", 1)[-1] in self.refuse:
            raise ServerError(self.refuse[path.rsplit("/", 1)[-1]])
        self.writes.append((path, data))


def run_hook(client: Recorder, word: str, answer: str, root: str = "agent/", pane: str = "") -> int:
    return hook.hook(client, root, Namespace(word=word, session="a", answer=answer, pane=pane))


def test_an_answer_ends_the_turn_alone_and_no_word_follows_it():
    client = Recorder()
    assert run_hook(client, "await", "All done.\n") == 0
    assert client.writes == [("agent/a/out", b"All done.\n")]


def test_without_an_answer_or_with_one_refused_the_word_ends_the_turn(capsys):
    client = Recorder()
    assert run_hook(client, "await", "", root="/") == 0
    assert client.writes == [("a/status", b"await\n")]
    client = Recorder(refuse={"out": "send at most 10 bytes: the answer for a is too long (12 bytes)"})
    assert run_hook(client, "await", "All done.\n") == 0
    assert client.writes == [("agent/a/status", b"await\n")]
    assert "agent/a/out refused the answer (send at most 10 bytes" in capsys.readouterr().err


def test_an_answer_refused_because_its_turn_is_over_ends_nothing(capsys):
    # interrupted meanwhile, and maybe the next prompt typed: an await now could end that turn
    client = Recorder(refuse={"out": f"busy: out: {hook.NO_TURN}: a is await, so this one would be no turn's"})
    assert run_hook(client, "await", "All done.\n") == hook.EXIT_REFUSED
    assert client.writes == []
    assert "refused the answer" in capsys.readouterr().err


# what the server says when its save failed, as a 9P2000 client gets it (worded for EIO, cut to 127 bytes)
NOT_SAVED = word_for_9p2000("what was written not saved: the disk refused it (No space left on device); see events",
                            "i/o error")


def test_an_answer_taken_but_not_saved_is_kept_for_the_next_server_and_no_word_follows(capsys):
    """Exit 1, as if no server answered: hooks/anvilfs-status leaves await in the pane, the answer is in tmux."""
    assert NOT_SAVED.startswith("i/o error: what was written not saved: the disk refused it")
    client = Recorder(refuse={"out": NOT_SAVED})
    assert run_hook(client, "await", "All done.\n") == hook.EXIT_KEEP == 1
    assert client.writes == []  # no await: the server took the answer, the turn is over there
    assert "the answer is kept for the next server" in capsys.readouterr().err


def test_a_word_taken_but_not_saved_is_kept_in_the_pane(capsys):
    client = Recorder(refuse={"status": NOT_SAVED.replace("what was written", "the write")})
    assert run_hook(client, "await", "") == hook.EXIT_KEEP


@pytest.fixture
def tmux_calls(tmp_path, monkeypatch) -> Path:
    """A tmux on PATH that records each call's arguments, a line each."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tmux").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/calls\ncat > /dev/null\n')
    (bin_dir / "tmux").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path / "calls"


@pytest.mark.parametrize("refusal, kept", [
    (None, False),
    (f"busy: out: {hook.NO_TURN}: turn 2 of a has not said running yet, so this answer is an earlier turn's", False),
    ("send at most 10 bytes: the answer for a is too long (12 bytes)", False),  # then await ends the turn
    (NOT_SAVED, True),
], ids=["taken", "late", "too large", "not saved"])
def test_the_kept_answer_is_deleted_once_a_server_answered_for_good(tmux_calls, refusal, kept):
    """A late answer the server refused must not stay where a next server would take it for the turn running now."""
    client = Recorder(refuse={"out": refusal} if refusal else None)
    run_hook(client, "await", "All done.\n", pane="%7")
    calls = tmux_calls.read_text().splitlines() if tmux_calls.exists() else []
    assert calls == ([] if kept else ["delete-buffer -b anvilfs-answer-%7"])


def test_a_refused_word_exits_3_so_the_script_keeps_nothing_in_the_pane(capsys):
    client = Recorder(refuse={"status": "status: only hook-driven (tmux) agents and external owners write it"})
    assert run_hook(client, "running", "") == hook.EXIT_REFUSED == 3
    assert "agent/a/status: status: only hook-driven" in capsys.readouterr().err


def test_the_command_needs_anvilfs_session_and_a_word(monkeypatch, capsys):
    monkeypatch.delenv("ANVILFS_SESSION", raising=False)
    assert main(["hook", "await"]) == 1
    assert "ANVILFS_SESSION is not set" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["hook", "done"])
    assert "invalid choice: 'done' (choose from 'running', 'await')" in capsys.readouterr().err


def test_the_answer_is_kept_in_tmux_before_any_server_is_asked(tmp_path, monkeypatch, capsys):
    """No server at the address: the answer is in the buffer the tmux backend looks in, and the exit is 1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tmux").write_text(f'#!/bin/sh\necho "$*" > {tmp_path}/argv\ncat > {tmp_path}/kept\n')
    (bin_dir / "tmux").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("ANVILFS_SESSION", "a")
    monkeypatch.setenv("TMUX_PANE", "%7")
    monkeypatch.setattr(sys, "stdin", open(transcript(tmp_path, json.dumps(STOP)), encoding="utf-8"))
    assert main(["-a", f"unix!{tmp_path}/no-server", "hook", "await"]) == 1
    assert (tmp_path / "argv").read_text().split() == ["load-buffer", "-b", "anvilfs-answer-%7", "-"]
    assert (tmp_path / "kept").read_text() == "All done.\n"
    assert hook.ANSWER_BUFFER == tmux_backend.ANSWER_BUFFER  # the backend looks where the hook keeps it
    assert "no-server" in capsys.readouterr().err


def test_the_client_does_not_load_trio():
    code = "import sys, anvilfs.cli; assert 'trio' not in sys.modules and 'anvilfs.client.hook' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# `anvilfs hook await` in a child whose address space is bounded: an unbounded read fails there, not on the machine
BOUNDED_HOOK = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
                "from anvilfs.cli import run; run()")


def bounded_hook_await(tmp_path: Path, stdin, what: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "ANVILFS_SESSION": "a", "HOME": str(tmp_path)}
    try:
        return subprocess.run([sys.executable, "-c", BOUNDED_HOOK, "-a", f"unix!{tmp_path}/no-server", "hook", "await"],
                              stdin=stdin, capture_output=True, text=True, timeout=30, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`anvilfs hook await` with {what} did not end within 30 s")


@pytest.mark.parametrize("kind", ["/dev/zero", "a FIFO", "a directory"])
def test_a_transcript_path_that_is_no_regular_file_gives_no_answer_at_once(tmp_path, kind):
    # /dev/zero has no end to seek to, and read whole it was a MemoryError; a FIFO's open waited for a writer
    path = {"/dev/zero": "/dev/zero", "a directory": str(tmp_path)}.get(kind, str(tmp_path / "fifo"))
    if kind == "a FIFO":
        os.mkfifo(path)
    with open(transcript(tmp_path, json.dumps(STOP | {"last_assistant_message": "", "transcript_path": path})), "rb") as stdin:
        r = bounded_hook_await(tmp_path, stdin, f"{kind} as the transcript")
    assert r.returncode == 1 and "no-server" in r.stderr and "Error" not in r.stderr, r.stderr  # no server, no traceback
    assert hook.transcript_answer(path) == ""


def test_an_input_that_never_ends_is_read_up_to_input_most_bytes(tmp_path):
    # read for INPUT_WAIT (5 s) whatever came: /dev/zero gave gigabytes, a MemoryError
    with open("/dev/zero", "rb") as stdin:
        r = bounded_hook_await(tmp_path, stdin, "/dev/zero as its input")
    assert r.returncode == 1 and "no-server" in r.stderr and "Error" not in r.stderr, r.stderr


def test_input_most_bounds_what_is_read(monkeypatch):
    monkeypatch.setattr(hook, "INPUT_MOST", 10)
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stream:
        os.write(write, b'{"last_assistant_message": "hi"}')
        os.close(write)
        assert hook.read_input(stream) == b""  # more than INPUT_MOST: no hook's input to read


def test_json_nested_too_deep_is_no_answer_and_no_traceback(tmp_path):
    deep = "[" * 100000 + "]" * 100000  # json.loads raised RecursionError on it
    path = transcript(tmp_path, entry("user", "now"), deep, entry("assistant", [{"type": "text", "text": "the end"}], "m9"))
    assert hook.transcript_answer(path) == "the end"
    assert hook.answer_of(f'{{"last_assistant_message": {deep}}}'.encode()) == ""
