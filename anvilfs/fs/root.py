"""The root of the tree, `agent/` (SPEC §3)."""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from ..beads import Board, Convoys
from ..errors import InvalidRequest, NotPermitted
from ..journal import Journal
from ..mail import PostOffice
from ..sessions import Session, Sessions
from ..sessions.acting import check_create, is_worker
from ..spending import Spending
from ..teamwork import Teamwork
from ..tree import Args, Caller, Command, CommandTable, CtlFile, Directory, Node, StreamFile, TextFile
from ..tree.objects import ObjectDirectories
from ..usage.budgets import parse_tokens, parse_usd
from .beads_dir import BeadVerbs, Extras, beads_directory, convoys_directory
from .cursors import JournalCursor
from .kept_lines import KeptLines
from .mail_dir import Report, human_directory, mailbox_entries
from .session_dir import session_directory
from .worktrees_dir import merges_directory, session_files, worktrees_file
from .stamps import Follows, JournalStamp, follows
from .usage_files import UsageFiles

NEW_USAGE = ("new <backend> <cwd> [name=N] [role=R] [model=M] [ephemeral] [notify] [conductor] "
             "[worktree [base=BRANCH]] [budget=USD] [token_budget=N] (with worktree, cwd is the repository)")


class AgentTree:
    """Builds `agent/` and keeps one directory object per session."""

    def __init__(self, sessions: Sessions, events: Journal, errors: Journal, *, board: Board, convoys: Convoys,
                 post: PostOffice, report: Report, teamwork: Teamwork, spending: Spending):
        """`agent/`; roles come from sessions.roles (name -> prompt text)."""
        self.sessions = sessions
        self.teamwork = teamwork
        usage = UsageFiles(spending)
        self._sessions = ObjectDirectories(sessions.find, sessions.all, lambda s: s.name, lambda s: session_directory(
            sessions, s, lambda: mailbox_entries(post, s.name, report) + session_files(teamwork, s.name)
            + [usage.session_file(s)], usage.session_commands))
        self._objects = [self._sessions]  # the directories of sessions, beads, convoys: built ahead (build_ahead)
        # `list`: a session's line is made again when its state, definition or backend is another
        self._list_lines = KeptLines(lambda s: (s, s.state, s.definition, s.backend), _list_line)
        files = [
            CtlFile("ctl", "ctl", CommandTable([
                Command("new", self._new, NEW_USAGE, min_words=2, max_words=2,
                        options=frozenset({"name", "role", "model", "base", "budget", "token_budget"}),
                        flags=frozenset({"ephemeral", "notify", "conductor", "worktree"})),
            ]), readable=True),
            follows(TextFile("list", "list", self._list), lambda: sessions.version, lambda: sessions.changed_at),
            _journal(StreamFile("events", "events", lambda: JournalCursor(events)), events),
            # what these show is outside the server (PATH, the configuration's roles/): each look compares it
            _compared(TextFile("backends", "backends", self._backends)),
            _compared(TextFile("roles", "roles", lambda: "".join(f"{name}\n" for name in sorted(sessions.roles())))),
            _journal(TextFile("errors", "errors", errors.text), errors),
            beads_directory(board, convoys, is_session=lambda name: sessions.find(name) is not None,
                            is_worker=lambda uname: is_worker(sessions.find, uname), objects=self._objects,
                            verbs=BeadVerbs(teamwork.claim, teamwork.complete,
                                            lambda bead: b.branch if (b := teamwork.ws.bead(bead)) else ""),
                            extras=Extras(files=usage.bead_files, beside=(usage.summary_file("beads"),))),
            convoys_directory(convoys, self._objects, Extras(usage.convoy_files, usage.convoy_commands,
                                                             (usage.summary_file("convoys"),))),
            human_directory(post, report),
            merges_directory(teamwork),
            worktrees_file(teamwork),
            usage.root_file(),
        ]
        self.root = Directory("/", "/", files, more=self._sessions.children, find=self._sessions.lookup,
                              remove=self._remove_session)

    async def build_ahead(self, slice_size: int = 100, warm: Callable[[Node], None] | None = None) -> None:
        """Build the directories of every session, bead and convoy a slice at a time, ending the loop's step
        once it has run STEP (_Steps), so that no first listing (10,000 beads) builds them all while a client
        waits. `warm` is the server's: what a first listing sends of each directory, encoded with it (the
        first `ls beads/` after a start encoded 10,000 records, 20 ms).

        The app runs this before the server accepts a client (App.run). Run beside the first clients, a
        request that came during a step waited for it (trio looks at the sockets between steps) and, half
        the time, for the next (trio runs a batch of tasks in either order): a read of 7 chunks in the
        first tenth of a second after a start took up to 42 ms. Steps were counts, slices of 1,000 objects:
        4-7 ms of beads, but 21 ms of sessions, a stall after each start (issue 32, item 6). A step is a
        time now, the same on a slow machine as on a fast one, and each kind's listing is a step of its
        own: the tasks a start runs beside it (history, the sessions' runners) go on between steps."""
        step = _Steps()
        for objects in self._objects:
            objects.warm = warm
            while objects.build_some(slice_size):
                await step.end_if_long()
            await step.end()
            objects.children()  # the listing too, so that the first a client asks for finds it kept (6 ms of
            await step.end()  # 10,000 beads: a step of its own)
        # Each session's files too (a bead's are made when walked to): every client that shows sessions
        # reads some of each one's (the web opening on 1,000 sessions walked to every `queue`, making 1,000
        # directories' files at once, and the collector then went through them all: 94 ms). Made here, they
        # are frozen with the rest of the start's (serve.py).
        for directory in self._sessions.children():
            directory.build_entries()
            await step.end_if_long()

    def _remove_session(self, node: Node, caller: Caller) -> None:
        """rm of a session's directory is its ctl's `remove` (a stopped or exited session)."""
        if self._sessions.lookup(node.name) is not node:
            raise NotPermitted(f"{node.name} is gone already")
        self.sessions.remove(node.name)

    def _new(self, args: Args) -> str:
        backend, cwd = args.words
        check_create(self.sessions.find, args.caller.uname if args.caller else "", cwd)
        options = dict(role=args.options.get("role", ""), model=args.options.get("model", ""),
                       ephemeral="ephemeral" in args.flags, notify="notify" in args.flags,
                       conductor="conductor" in args.flags,
                       budget_usd=parse_usd(args.options["budget"], "new: budget=") if "budget" in args.options else None,
                       token_budget=(parse_tokens(args.options["token_budget"], "new: token_budget=")
                                     if "token_budget" in args.options else None))
        if "worktree" in args.flags:  # cwd is the repository; the session's cwd its new worktree
            return self.teamwork.new_session(backend, cwd, name=args.options.get("name", ""),
                                             base=args.options.get("base"), **options)
        if "base" in args.options:
            raise InvalidRequest("new: base= goes with worktree: a session without a worktree works on what its "
                                 "cwd has checked out")
        return self.sessions.new(backend, cwd, name=args.options.get("name", ""), **options).name

    def _list(self) -> str:
        return self._list_lines.text(self.sessions.all())

    def _backends(self) -> str:
        return "".join(
            f"{b.name} {b.kind} {b.availability()}{' simulated' if b.simulated else ''}\n"
            for b in self.sessions.backends.values()
        )


def _list_line(s: Session) -> str:
    line = f"{s.name} {s.backend.name} {s.state.value} {s.definition.role or '-'} {s.definition.cwd}"
    return line + (" simulated\n" if s.simulated else "\n")


class _Steps:
    """Ends a task's step (a checkpoint) once it has run STEP seconds: work done in many small calls yields
    as often as a time says, not a count."""

    STEP = 0.005

    def __init__(self) -> None:
        self._ends = time.perf_counter() + self.STEP

    async def end_if_long(self) -> None:
        if time.perf_counter() >= self._ends:
            await self.end()

    async def end(self) -> None:
        await trio.lowlevel.checkpoint()
        self._ends = time.perf_counter() + self.STEP


def _journal(node: Node, journal: Journal) -> Node:
    node.stamp = JournalStamp(journal)
    if isinstance(node, TextFile):
        node.sized_by = lambda: journal.next_seq  # its text changes at each line, and only then
    return node


def _compared(node: TextFile) -> TextFile:
    """A small file of what the server hears of no change of: its stamp compares its text at each look,
    its mtime the second a look first found it changed. Taken once now: until it changes, its mtime is
    the server's start, as a file's that never changes."""
    node.stamp = Follows(node.render, node.render)
    node.stamp()
    return node
