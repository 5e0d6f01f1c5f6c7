"""The root of the tree, `agent/` (SPEC §3)."""

from __future__ import annotations

from ..beads import Board, Convoys
from ..journal import Journal
from ..sessions import Session, Sessions
from ..tree import Args, Command, CommandTable, CtlFile, Directory, StreamFile, TextFile
from ..tree.objects import ObjectDirectories
from .beads_dir import beads_directory, convoys_directory
from .cursors import JournalCursor
from .session_dir import session_directory

ROOT_FILES = frozenset({"ctl", "list", "events", "backends", "errors", "roles", "human", "beads", "convoys"})
NEW_USAGE = "new <backend> <cwd> [name=N] [role=R] [model=M] [ephemeral]"


class AgentTree:
    """Builds `agent/` and keeps one directory object per session."""

    def __init__(self, sessions: Sessions, events: Journal, errors: Journal, *, board: Board, convoys: Convoys):
        """`agent/`; roles come from sessions.roles (name -> prompt text)."""
        self.sessions = sessions
        self._sessions = ObjectDirectories(sessions.find, sessions.all, lambda s: s.name,
                                           lambda s: session_directory(sessions, s))
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
            beads_directory(board, convoys, is_session=lambda name: sessions.find(name) is not None),
            convoys_directory(convoys),
        ]
        self.root = Directory("/", "/", files, more=self._sessions.children, find=self._sessions.lookup)

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
