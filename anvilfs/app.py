"""One anvilfs server's state: sessions, beads and convoys, journals, and the tree that shows them."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trio

from .backends import SimBackend
from .beads import Board, Convoys, Status, Who
from .domain_events import ApprovalDecided, EventBus, SessionMoved
from .fs import AgentTree
from .journal import Journal
from .mail import DEFAULT_NOTICE, TOOLS_NOTICE, MailLimits, MailTables, MemoryMailFiles, NoticeRules, Notices, PostOffice
from .mail import store as mail_store
from .mail.imported import import_mail_files
from .sessions import SERVER_NAMES, SESSIONS_SCHEMA, Backend, RestartPolicy, SessionLimits, Sessions, SessionStore, State
from .storage import HISTORY_SCHEMA, Database, GitHistory, PrivateDir, QuickCheck, TomlObjects
from .spending import Spending
from .teamwork import Teamwork
from .usage.ledger import SCHEMA as USAGE_SCHEMA
from .workspaces import SCHEMA as WORKSPACES_SCHEMA
from .workspaces import Records, Workspaces
from .worktrees import MergeConfig

log = logging.getLogger("anvilfs.app")

# The tables of STATE/anvilfs.db, each domain's own (CREATE ... IF NOT EXISTS), made at start.
SCHEMA = "\n".join([
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    SESSIONS_SCHEMA,
    mail_store.SCHEMA,
    HISTORY_SCHEMA,
    WORKSPACES_SCHEMA,
    USAGE_SCHEMA,
])


@dataclass(frozen=True, slots=True)
class MailSettings:
    limits: MailLimits = MailLimits()
    notice: str = DEFAULT_NOTICE
    approval_reminder: float = 3600.0  # seconds; 0: never
    tools_notice: str = TOOLS_NOTICE  # to a session whose agent has anvilfs's tools


class App:
    """Everything a server serves, independent of how clients connect."""

    def __init__(
        self,
        *,
        backends: dict[str, Backend] | None = None,
        limits: SessionLimits = SessionLimits(),
        restart: RestartPolicy = RestartPolicy(),
        state_dir: str | Path | None = None,
        roles: Callable[[], dict[str, str]] = dict,
        agent_env: Callable[[str], dict[str, str]] | None = None,
        mail: MailSettings = MailSettings(),
        paused: bool = False,
        merge_config: Callable[[str], MergeConfig] = lambda repo: MergeConfig(),
    ):
        self.events = Journal(keep=1000)
        self.errors = Journal(keep=200)
        self.bus = EventBus(self.events)
        if backends is None:
            backends = {"sim": SimBackend()}
        state = self._state = PrivateDir(state_dir) if state_dir is not None else None
        # everything durable but the beads' and convoys' TOML files: one database, one writer thread
        self.db = Database(state, "anvilfs.db", SCHEMA) if state is not None else None
        self.sessions = Sessions(
            backends, self.events, limits=limits, restart=restart, roles=roles,
            store=SessionStore(self.db, state) if state is not None else None, publish=self.bus.publish, paused=paused,
            **({"agent_env": agent_env} if agent_env else {}),
            # each session's private directory for the files its CLI reads (backends/agent_tools.py)
            **({"agent_home": lambda name, agents=state.subdir("agents").path: os.path.join(agents, name)}
               if state is not None else {}),
        )
        # beads and convoys: TOML files and their messages written by the database's writer thread, committed
        # to git (STATE/.git) soon after (storage/history.py)
        self.history = GitHistory(state, self.db, on_error=lambda text: self.record_error("history", text)) \
            if state else None
        self.board = Board(self._objects("beads", "bead"), self.bus,
                           is_session=lambda name: self.sessions.find(name) is not None)
        self.convoys = Convoys(self._objects("convoys", "convoy"), self.bus, self.board)
        self.post = self._post_office(state, mail)
        # worktree sessions and the merge queue: their records in the database, their worktrees in STATE/worktrees
        self.workspaces = Workspaces(Records(self.db), os.path.join(state.path, "worktrees") if state else "",
                                     merge_config, self.bus.publish)
        self.teamwork = Teamwork(self.sessions, self.board, self.post, self.workspaces, self.bus)
        # what the agents spend, counted to the beads and convoys they work on, and the budgets that hold them
        self.spending = Spending(self.sessions, self.board, self.post, self.bus, self.db)
        self.tree = AgentTree(self.sessions, self.events, self.errors, board=self.board, convoys=self.convoys,
                              post=self.post, report=self.record_error, teamwork=self.teamwork,
                              spending=self.spending)
        # a session may not be named as a file beside it, nor as one the server keeps the name for
        self.sessions.reserved = self.tree.root.fixed_names() | SERVER_NAMES
        self.bus.subscribe(SessionMoved, self._session_failed)
        self.warm: Callable[[object], None] | None = None  # the server's: see AgentTree.build_ahead
        self.built: Callable[[], None] = lambda: None  # the server's: once build_ahead is done

    def _objects(self, directory: str, table: str) -> TomlObjects | None:
        if self._state is None:
            return None
        return TomlObjects(self._state.subdir(directory), table, self.db, self.history)

    def _post_office(self, state: PrivateDir | None, settings: MailSettings) -> PostOffice:
        """Mail, and its ties to the other domains: who is a session, notices, beads' approvals."""
        sessions = self.sessions
        if state is not None and self.db is not None:
            self._import_mail(state, self.db)
        post = PostOffice(MailTables(self.db) if self.db is not None else MemoryMailFiles(), self.bus,
                          is_session=lambda name: sessions.find(name) is not None, limits=settings.limits)

        def ready(name: str) -> bool:
            s = sessions.find(name)
            return s is not None and s.state in (State.IDLE, State.AWAIT) and not s.queue

        def wants(name: str) -> bool:
            s = sessions.find(name)
            return s is not None and s.definition.notify and not s.definition.ephemeral

        def has_tools(name: str) -> bool:
            s = sessions.find(name)
            return s is not None and s.backend.gives_tools

        rules = NoticeRules(wants=wants, ready=ready, submit=sessions.submit, has_tools=has_tools)
        notices = Notices(self.bus, rules, settings.notice, settings.tools_notice)
        post.on_arrival = notices.arrived
        post.approvals.reminder = settings.approval_reminder
        post.approvals.bead_title = lambda bead: self.board.get(bead).title
        post.approvals.coordinator_of = lambda convoy: (c.coordinator if (c := self.convoys.find(convoy)) else "")
        post.approvals.may_decide = lambda bead, approved, by, writer: self.board.check_decision(
            bead, approved, self._who(by, writer))
        self.bus.subscribe(ApprovalDecided, self._decide_bead)
        return post

    def _import_mail(self, state: PrivateDir, db: Database) -> None:
        """What an earlier anvilfs kept as files goes into the tables, before anything reads them."""
        moved, problems = import_mail_files(state, db)
        for problem in problems:
            self.record_error("mail", problem)
        if moved:
            self.events.append(f"- mail kept as files by an earlier anvilfs imported into {db.path}; the files are "
                               f"in {moved}, never read again")

    def _session_failed(self, moved: SessionMoved) -> None:
        """A turn or a start that failed is an error like any other: its full text (the agent's own, for a
        CLI whose model refused) is kept in `errors` too, where a conductor looks for what went wrong."""
        if moved.state == State.ERROR.value:
            self.errors.append(f"{moved.session}: {moved.line}")

    def _who(self, participant: str, writer: str) -> Who:
        """Who answers in `participant`'s mail, written by the 9P user `writer` (the beads' rules see both)."""
        return Who(participant, participant if self.sessions.find(participant) is not None else None, writer)

    def _decide_bead(self, event: ApprovalDecided) -> None:
        who = self._who(event.by, event.writer)
        if event.approved:
            self.board.approve(event.bead, who)
        else:
            self.board.reject(event.bead, event.reason, who)

    def agree_on_approvals(self) -> None:
        """A bead's save and the record of its approval request are two durable steps: a server killed between
        them left a bead waiting with no request, or a request for a bead decided already. Make them agree."""
        approvals = self.post.approvals
        asked = {m.bead for m in approvals.waiting() if m.bead}
        for bead in self.board.all():
            if bead.status is Status.PENDING_APPROVAL and bead.id not in asked:
                request = approvals.ask_for_bead(bead.id, bead.assigned_to, bead.convoy)
                self.record_error("approvals", f"bead {bead.id} waited for approval with no request (the server "
                                               f"stopped between the two): request {request.id} sent to {request.to}")
        for request in approvals.waiting():
            bead = self.board.find(request.bead) if request.bead else None
            if bead is None or bead.status is Status.PENDING_APPROVAL:
                continue  # no bead (or a broken file, to be mended by hand): the request waits as it is
            approved = bead.status is Status.COMPLETED
            reason = "" if approved else (bead.review or f"bead {bead.id} is {bead.status.value}: it no longer "
                                                         "waits for approval")
            answer = approvals.answer_for_bead(request, approved, bead.approved_by or "anvilfs", reason)
            self.record_error("approvals", f"request {request.id} waited for bead {bead.id}, which is {bead.status.value} "
                                           f"(the server stopped before the request was answered): answered {answer.id}")

    @property
    def root(self):
        return self.tree.root

    def record_error(self, where: str, text: str) -> None:
        """Keep the full text of an error where a 9P2000.L user can read it."""
        self.errors.append(f"{where}: {text}")
        self.events.append(f"- error {where}: {text}")

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                if self.history is not None:
                    await nursery.start(self.history.run)  # first commits what a killed server left
                for problem in self.board.load() + self.convoys.load():  # before sessions restore: they release beads
                    self.record_error("beads", problem)
                self.convoys.recheck()
                nursery.start_soon(self.board.run_leases)
                nursery.start_soon(self.post.approvals.run)
                await nursery.start(self.sessions.run)
                for problem in self.post.load():  # after sessions restore: who is a participant is known
                    self.record_error("mail", problem)
                self.agree_on_approvals()
                await nursery.start(self.workspaces.run, lambda: {s.name: s.definition.cwd for s in self.sessions.all()})
                self.teamwork.agree()
                # before the server accepts a client: built while clients read, each of their round trips waited
                # for a build step or two, and a read of 7 chunks in the first tenth of a second took up to 42 ms;
                # the restart (to the first `list`) took as long either way (issue 32, item 6: history.md)
                await self._build_ahead()
                task_status.started()
                if self.db is not None:
                    nursery.start_soon(self._check_database)
        finally:
            if self.history is not None:
                with trio.move_on_after(10) as cleanup:
                    cleanup.shield = True
                    await self._flush_history()
                self.history.close()
            if self.db is not None:
                self.db.close()  # last: what the domains queued on their way out is committed
            if self._state is not None:
                self._state.close()  # every store's directory is one of its subdirs

    async def _build_ahead(self) -> None:
        await self.tree.build_ahead(warm=self.warm)
        self.built()

    async def _check_database(self) -> None:
        """SQLite's quick_check of the database (storage.QuickCheck), in a thread once clients are in: a damaged
        one is said in `errors`, a sound one in `events`, either in the log (`events` is a stream from its
        open: an operator, or a test, who comes later reads the log). A stop interrupts the check and waits
        for its thread: the database closes after."""
        check = QuickCheck(self.db.path)
        try:
            problems = await trio.to_thread.run_sync(check.run, abandon_on_cancel=True)
        except trio.Cancelled:
            check.stop()
            if not check.done.is_set():
                # bounded: a check that does not end (stop() interrupts SQLite; a lock is waited for 5 s at
                # most) must not keep the server from stopping; its read-only connection harms nothing left open
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(check.done.wait, 10)
            raise
        if problems == []:
            log.info("database %s checked (SQLite's quick_check): nothing wrong", self.db.path)
            self.events.append(f"- database: {self.db.path}: SQLite's quick_check found nothing wrong")
        elif problems:
            log.info("database %s checked (SQLite's quick_check): damaged, see errors", self.db.path)
            more = " (and more)" if len(problems) > 3 else ""
            self.record_error("database", f"{self.db.path} is damaged: SQLite's quick_check says "
                                          f"{'; '.join(problems[:3])}{more}. Sessions, mail and approvals kept in it may "
                                          "be lost or wrong (beads and convoys are files): stop the server and see "
                                          "docs/using.md, \"A damaged database\"")
        else:  # never called damage: a locked or unreadable file says nothing of what it holds
            log.info("database %s checked (SQLite's quick_check): not done (%s)", self.db.path, check.failed)
            self.record_error("database", f"could not check {self.db.path} (SQLite's quick_check): {check.failed}")

    async def _flush_history(self) -> None:
        try:
            await self.history.flush()
        except OSError as exc:  # nothing is lost: the journal waits for the next start
            self.record_error("history", f"{exc}; the next start commits it")
