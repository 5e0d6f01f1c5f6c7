"""The root of the tree, `agent/` (SPEC §3)."""

from __future__ import annotations

from ..journal import Journal
from ..sessions import Session, Sessions
from ..tree import Args, Command, CommandTable, CtlFile, Directory, StreamFile, TextFile
from .cursors import JournalCursor
from .session_dir import session_directory

ROOT_FILES = frozenset({"ctl", "list", "events", "backends", "errors", "roles", "human", "beads", "convoys"})
NEW_USAGE = "new <backend> <cwd> [name=N] [role=R] [model=M] [ephemeral]"


class AgentTree:
    """Builds `agent/` and keeps one directory object per session."""

    def __init__(self, sessions: Sessions, events: Journal, errors: Journal):
        """`agent/`; roles come from sessions.roles (name -> prompt text)."""
        self.sessions = sessions
        self._dirs: dict[str, tuple[Session, Directory]] = {}
        files = [
            CtlFile("ctl", "ctl", CommandTable([
                Command("new", self._new, NEW_USAGE, min_words=2, max_words=2,
                        options=frozenset({"name", "role", "model"}), flags=frozenset({"ephemeral"})),
            ]), readable=True),
            TextFile("list", "list", self._list),
            StreamFile("events", "events", lambda: JournalCursor(events)),
            TextFile("backends", "backends", self._backends),
            TextFile("roles", "roles", lambda: "".join(f"{name}\n" for name in sorted(sessions.roles()))),
            TextFile("errors", "errors", errors.text),
        ]
        self.root = Directory("/", "/", files, more=self._session_dirs, find=self._find)

    def _dir(self, session: Session) -> Directory:
        known = self._dirs.get(session.name)
        if known is None or known[0] is not session:  # a new session may reuse an old name
            known = self._dirs[session.name] = (session, session_directory(self.sessions, session))
        return known[1]

    def _find(self, name: str) -> Directory | None:
        session = self.sessions.find(name)
        return self._dir(session) if session is not None else None

    def _session_dirs(self) -> list[Directory]:
        sessions = self.sessions.all()
        if len(self._dirs) > len(sessions):  # some were removed: forget their directories
            names = {s.name for s in sessions}
            self._dirs = {name: known for name, known in self._dirs.items() if name in names}
        return [self._dir(s) for s in sessions]

    def _new(self, args: Args) -> str:
        backend, cwd = args.words
        session = self.sessions.new(
            backend, cwd, name=args.options.get("name", ""), role=args.options.get("role", ""),
            model=args.options.get("model", ""), ephemeral="ephemeral" in args.flags,
        )
        return session.name

    def _list(self) -> str:
        lines = []
        for s in self.sessions.all():
            line = f"{s.name} {s.backend.name} {s.state.value} {s.definition.role or '-'} {s.definition.cwd}"
            lines.append(line + (" simulated\n" if s.simulated else "\n"))
        return "".join(lines)

    def _backends(self) -> str:
        return "".join(
            f"{b.name} {b.kind} {b.availability()}{' simulated' if b.simulated else ''}\n"
            for b in self.sessions.backends.values()
        )
