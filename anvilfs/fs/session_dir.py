"""The directory of one session (SPEC §3, §5): its files, as a table."""

from __future__ import annotations

from ..errors import InvalidRequest
from ..sessions import Session, Sessions
from ..sessions.states import Event
from ..tree import Caller, CollectFile, Command, CommandTable, CtlFile, Directory, StreamFile, TextFile
from .cursors import StreamCursor, WaitCursor

_HOOK_WORDS = {"running": Event.TURN_BEGAN, "await": Event.TURN_DONE}


def session_directory(sessions: Sessions, session: Session) -> Directory:
    name = session.name
    key = f"session/{name}"

    def text(file: str, render) -> TextFile:
        return TextFile(file, f"{key}/{file}", lambda: _line(render()))

    files = [
        CtlFile("ctl", f"{key}/ctl", _session_commands(sessions, name)),
        CollectFile(
            "in", f"{key}/in",
            check=lambda size, caller: sessions.check_prompt(name, size),
            submit=lambda data, caller: sessions.submit(name, _prompt_text(data), caller.uname),
            abandoned=lambda data, caller: sessions.events.append(
                f"{name} prompt of {len(data)} bytes from {caller.uname} abandoned: the connection closed before the file was closed"),
        ),
        TextFile("out", f"{key}/out", lambda: session.out),
        TextFile("log", f"{key}/log", session.log_text),
        StreamFile("stream", f"{key}/stream", lambda: StreamCursor(session)),
        TextFile("status", f"{key}/status", lambda: _line(session.status_line()), lambda line, caller: _hook_status(session, line)),
        StreamFile("wait", f"{key}/wait", lambda: WaitCursor(session)),
        text("backend", lambda: session.backend.name + (" simulated" if session.simulated else "")),
        text("cwd", lambda: session.info.cwd),
        text("role", lambda: session.info.role),
        text("model", lambda: session.info.model),
    ]
    return Directory(name, key, files)


def _line(text: str) -> str:
    return text + "\n" if text else ""


def _prompt_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"prompt is not valid UTF-8 at byte {exc.start}; write text") from None


def _hook_status(session: Session, line: str) -> None:
    event = _HOOK_WORDS.get(line.split()[0])
    if event is None:
        raise InvalidRequest(f"status: {line!r} cannot be written; an agent's hook writes 'running' or 'await'")
    if not session.backend.accepts_hooks:
        raise InvalidRequest(
            f"status: session {session.name} runs on {session.backend.kind} backend {session.backend.name}, "
            "which reports its own turns; only agents started by hook-driven backends (tmux) write their status")
    session.move(event)


def _session_commands(sessions: Sessions, name: str) -> CommandTable:
    def run(action):
        def command(args) -> None:
            action()
        return command

    return CommandTable([
        Command("stop", run(lambda: sessions.stop(name)), "stop"),
        Command("kill", run(lambda: sessions.stop(name, kill=True)), "kill"),
        Command("restart", run(lambda: sessions.restart(name)), "restart"),
    ])
