"""The directory of one session (SPEC §3, §5): its files, as a table."""

from __future__ import annotations

from collections.abc import Callable

from ..sessions import Session, Sessions
from ..sessions.acting import check_drive, check_prompt_text
from ..tree import CollectFile, Command, CommandTable, CtlFile, Directory, Node, StreamFile, TextFile, decoded_text
from .cursors import NextCursor, StreamCursor, WaitCursor
from .stamps import epoch


def session_directory(sessions: Sessions, session: Session, mailbox: Callable[[], list[Node]] = list,
                      commands: Callable[[str], list[Command]] = lambda name: []) -> Directory:
    """A session's files, made when first walked to or listed (`ls /` makes none); `mailbox()` adds its mail,
    inbox/ and done/ (mail_dir.py), its worktree and branch (worktrees_dir.py) and its usage (usage_files.py);
    `commands(name)` the ctl words of other domains (budget, usage_files.py)."""
    return Directory(session.name, f"session/{session.name}",
                     lambda: _session_files(sessions, session, mailbox(), lambda: commands(session.name)))


def _session_files(sessions: Sessions, session: Session, mailbox: list[Node],
                   more: Callable[[], list[Command]]) -> list[Node]:
    name = session.name
    key = f"session/{name}"
    d = session.definition

    def text(file: str, render) -> TextFile:
        return TextFile(file, f"{key}/{file}", lambda: _line(render()))

    def moving(node: Node) -> Node:
        return _moves_with(session, node)

    files = [
        CtlFile("ctl", f"{key}/ctl", lambda: _session_commands(sessions, name, more())),
        CollectFile(
            "in", f"{key}/in",
            check=lambda size, caller: _check_prompt(sessions, name, size, caller),
            submit=lambda data, caller: _submit(sessions, name, decoded_text(data, "prompt"), caller.uname),
            abandoned=lambda data, caller: sessions.events.append(
                f"{name} prompt of {len(data)} bytes from {caller.uname} abandoned: the connection closed before the file was closed"),
            ignored=lambda caller: sessions.events.append(
                f"{name} prompt of 0 bytes from {caller.uname} ignored: nothing to run"),
        ),
        *(_owner_files(sessions, session) if session.backend.owner_driven else [
            _answer_file(sessions, session) if session.backend.hook_driven else
            # a stat measures an answer once (a long one not in ASCII costs ~1 ms to encode)
            moving(TextFile("out", f"{key}/out", lambda: session.out, sized_by=lambda: session.out)),
            moving(TextFile("status", f"{key}/status", lambda: _line(session.status_line()),
                            lambda line, caller: sessions.owners.hook(name, line, caller.uname))),
        ]),
        # the transcript only grows, record by record: a stat joins it again only once one came
        moving(TextFile("log", f"{key}/log", session.log_text, sized_by=lambda: len(session.transcript))),
        moving(StreamFile("stream", f"{key}/stream", lambda: StreamCursor(session))),
        moving(StreamFile("wait", f"{key}/wait", lambda: WaitCursor(session))),
        text("backend", lambda: session.backend.name + (" simulated" if session.simulated else "")),
        text("cwd", lambda: d.cwd),
        text("role", lambda: d.role),
        text("model", lambda: d.model),
        _moves_with_pid(session, text("pid", lambda: str(session.agent.pid or ""))),
        _moves_with_queue(session, TextFile("queue", f"{key}/queue", lambda: _queue(session))),
        *mailbox,
    ]
    return files


def _check_prompt(sessions: Sessions, name: str, size: int, caller) -> None:
    """A prompt is checked at each Twrite: who may prompt this session (acting.py), then what it can take."""
    check_drive(sessions.find, caller.uname, name, "in")
    sessions.check_prompt(name, size)


def _submit(sessions: Sessions, name: str, text: str, sender: str):
    check_prompt_text(sessions.find, sender, name, text)
    return sessions.submit(name, text, sender)


def _moves_with(session: Session, node: Node) -> Node:
    """Mark a file whose content moves with the session's state, queue or transcript: its qid version and
    mtime are the session's stamp, so a client's cache sees each change."""
    node.stamp = session.stamp
    return node


def _moves_with_pid(session: Session, node: Node) -> Node:
    """`pid`: moves with the session, and with the agent's pid, which its backend sets with no change of the session."""
    node.stamp = session.pid_stamp
    return node


def _moves_with_queue(session: Session, node: Node) -> Node:
    """`queue`: moves with the session, and with each prompt that comes in.

    It lists the prompts on their way to disk too (`incoming`), which join the session's queue, and
    change it, only once they landed; each took the next `prompt_seq` as it came, at its `at`.
    """
    def stamp() -> tuple[int, int]:
        version, last = session.stamp()
        if session.incoming:
            last = max(last, epoch(session.incoming[-1].at))
        return version + session.prompt_seq, last
    node.stamp = stamp
    return node


def _owner_files(sessions: Sessions, session: Session) -> list[Node]:
    """An external session's `out`, `status` and `next`, through which its owner is its agent (sessions/owned.py)."""
    name, key, owners = session.name, f"session/{session.name}", sessions.owners
    return [
        _answer_file(sessions, session),
        _moves_with(session, TextFile("status", f"{key}/status", lambda: _line(session.status_line()),
                                      lambda line, caller: owners.report(name, line, caller.uname))),
        _moves_with(session, StreamFile("next", f"{key}/next", lambda: NextCursor(owners, session))),
    ]


def _answer_file(sessions: Sessions, session: Session) -> CollectFile:
    """`out` that takes the running turn's answer: from an external session's owner, or a hook-driven agent's hook."""
    name, key, owners = session.name, f"session/{session.name}", sessions.owners
    return _moves_with(session, CollectFile(
        "out", f"{key}/out", render=lambda: session.out,
        check=lambda size, caller: owners.check_answer(name, size, caller.uname),
        belongs_to=lambda: session.turn,  # the answer is the running turn's at its first write, or no turn's
        submit=lambda data, caller, turn: owners.answer(name, decoded_text(data, "answer"), turn, caller.uname),
        abandoned=lambda data, caller: sessions.events.append(
            f"{name} answer of {len(data)} bytes from {caller.uname} abandoned: the connection closed before the file was closed"),
        ignored=lambda caller: sessions.events.append(
            f"{name} answer of 0 bytes from {caller.uname} ignored: write 'await' to status to end a turn with no answer"),
    ))


def _line(text: str) -> str:
    return text + "\n" if text else ""


def _queue(session: Session) -> str:
    """One line per waiting prompt: position, sender, size, and its first line.

    The prompts on their way to disk (their clunk not answered yet) are listed after the queued
    ones: a conductor that lost a write's answer looks here before it sends the prompt again.
    """
    lines = []
    for i, prompt in enumerate((*session.queue, *session.incoming), 1):
        first = prompt.text.strip().splitlines()[0] if prompt.text.strip() else ""
        lines.append(f"{i} {prompt.sender} {len(prompt.text.encode())} {first[:80]}\n")
    return "".join(lines)


def _session_commands(sessions: Sessions, name: str, more: list[Command]) -> CommandTable:
    def command(action):
        def run(args) -> None:
            check_drive(sessions.find, args.caller.uname if args.caller else "", name, "ctl")
            action(name)
        return run

    return CommandTable([
        Command("stop", command(sessions.stop), "stop"),
        Command("kill", command(lambda n: sessions.stop(n, kill=True)), "kill"),
        Command("restart", command(sessions.restart), "restart"),
        Command("interrupt", command(sessions.interrupt), "interrupt"),
        Command("clear", command(sessions.clear), "clear"),
        Command("remove", command(sessions.remove), "remove"),
        *more,
    ])
