"""Sessions on disk, so a server that stops or crashes loses nothing.

    STATE/sessions/NAME.toml   definition, status, queued prompts, the agent's saved() data
    STATE/sessions/NAME.log    the transcript, appended as it grows
    STATE/sessions/NAME.out    the last answer

A .toml file is replaced whole (written to a temporary file, then renamed),
so it is always either the old or the new version; it is written before the
request that changed it is answered, so a prompt whose close was answered is
on disk.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from . import tomlwrite
from .session import Definition, Prompt, Session


@dataclass
class SavedSession:
    definition: Definition
    state: str
    detail: str
    turn_count: int
    restarts: int
    queue: list[Prompt]
    agent: dict
    out: str = ""
    log: str = ""
    role_pending: bool = False


class SessionStore:
    def __init__(self, state_dir: str | os.PathLike):
        self.dir = Path(state_dir) / "sessions"
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _path(self, name: str, suffix: str) -> Path:
        return self.dir / f"{name}{suffix}"

    def _replace(self, path: Path, text: str) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def save(self, session: Session) -> None:
        doc = {
            "session": asdict(session.definition),
            "status": {
                "state": session.state.value, "detail": session.detail, "turns": session.turn_count,
                "restarts": session.restarts, "role_pending": session.role_pending,
            },
            "agent": session.agent.saved(),
            "queue": [{"sender": p.sender, "at": p.at, "text": p.text} for p in session.queue],
        }
        text = tomlwrite.dumps(doc, comment="anvilfs session; rewritten by the server on every change")
        self._replace(self._path(session.name, ".toml"), text)

    def save_out(self, session: Session) -> None:
        self._replace(self._path(session.name, ".out"), session.out)

    def append_log(self, session: Session, text: str) -> None:
        with open(self._path(session.name, ".log"), "a") as log:
            log.write(text)

    def load_all(self) -> tuple[list[SavedSession], list[str]]:
        """The saved sessions, and a line for each file that could not be read."""
        sessions, problems = [], []
        for path in sorted(self.dir.glob("*.toml")):
            try:
                sessions.append(self._load(path))
            except Exception as exc:  # a damaged file must not stop the server
                problems.append(f"{path}: cannot be read ({type(exc).__name__}: {exc}); left as it is")
        return sessions, problems

    def _load(self, path: Path) -> SavedSession:
        data = tomllib.loads(path.read_text())
        status = data.get("status", {})
        name = path.stem
        return SavedSession(
            definition=Definition(**data["session"]),
            state=status.get("state", "exited"), detail=status.get("detail", ""),
            turn_count=status.get("turns", 0), restarts=status.get("restarts", 0),
            role_pending=status.get("role_pending", False),
            queue=[Prompt(p["text"], p["sender"], p.get("at", "")) for p in data.get("queue", [])],
            agent=data.get("agent", {}),
            out=_read(self._path(name, ".out")), log=_read(self._path(name, ".log")),
        )


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
