"""`beads/` and `convoys/` (SPEC §3): the work-tracking domain as files.

    beads/ctl            new <title> <role> <description> [dep-id ...] [requires_approval=true] [owns=GLOB ...] [convoy=ID]
    beads/list  ready  ready.<role>  graph
    beads/<id>/          status title description role assigned_to result review depends_on owns convoy context ctl
    convoys/ctl          new <title> <goal>
    convoys/list
    convoys/<id>/        title goal status coordinator beads context progress ctl
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..beads import Bead, Board, Convoys, Who
from ..beads.model import MAX_TEXT, Convoy
from ..beads.view import Replaced
from ..errors import InvalidRequest, NotPermitted
from ..tree import Args, Caller, CollectFile, Command, CommandTable, CtlFile, Directory, TextFile, decoded_text
from ..tree.objects import ObjectDirectories
from .kept_lines import KeptLines
from .stamps import Stamps, epoch, follows, now

BEAD_NEW = "new <title> <role> <description> [dep-id ...] [requires_approval=true] [owns=GLOB ...] [convoy=ID]"
CONVOY_NEW = "new <title> <goal>"


def who(caller: Caller | None, is_session) -> Who:
    name = caller.uname if caller is not None else "none"
    return Who(name, name if is_session(name) else None)


def _check_holder(board: Board, bead_id: str, caller: Caller | None, is_worker, what: str) -> None:
    """An agent works on the beads it holds (sessions/acting.py): another's it may not finish, drop or rewrite."""
    uname = caller.uname if caller is not None else ""
    holder = board.get(bead_id).assigned_to
    if holder != uname and is_worker(uname):
        raise NotPermitted(f"{what}: bead {bead_id} is {'held by ' + holder if holder else 'held by no one'}; "
                           f"session {uname}'s agent works on the beads it holds (claim one first)")


@dataclass(frozen=True, slots=True)
class BeadVerbs:
    """The verbs that act beyond the board when the holder works in a worktree (teamwork.py): claim checks out
    the bead's branch, complete commits what the agent left; `branch` names a bead's branch ("" for none)."""

    claim: Callable[[str, Who, str | None, int | None], object]
    complete: Callable[[str, str | None, str], object]
    branch: Callable[[str], str]


def board_verbs(board: Board) -> BeadVerbs:
    return BeadVerbs(board.claim, lambda bead, result, by: board.complete(bead, result, by=by), lambda bead: "")


@dataclass(frozen=True, slots=True)
class Extras:
    """What other domains add to each bead's or convoy's directory, by its id: files, and ctl words; and
    files beside them, in `beads/` (`convoys/`) itself."""

    files: Callable[[str], list] = lambda key: []
    commands: Callable[[str], list[Command]] = lambda key: []
    beside: tuple = ()


NO_EXTRAS = Extras()

# The bead and convoy directories that keep their files made (tree/objects.py): the ones walked into
# last. A worker polls its few; a client that walks them all makes each one's again as it comes.
KEPT_WITH_FILES = 256


def beads_directory(board: Board, convoys: Convoys, is_session, is_worker=lambda uname: False,
                    objects: list[ObjectDirectories] | None = None, verbs: BeadVerbs | None = None,
                    extras: Extras = NO_EXTRAS) -> Directory:
    """The files drawn from every bead move at each change of the board that changes them (stamps.py).
    `objects` gets the beads' directories, for the start to build them a slice at a time (root.py)."""
    verbs = verbs or board_verbs(board)
    stamps = Stamps()  # a bead's directory is built again at each change of the bead: its files' stamps stay

    ready = _ReadyFiles(board)

    def find(name: str):
        if name.startswith("ready.") and len(name) > 6:
            return ready.file(name[6:])
        return beads.lookup(name)

    def more():
        return [ready.file(role) for role in board.roles()] + beads.children()

    beads = ObjectDirectories(board.find, board.all, lambda b: b.id,
                              lambda b: _bead_directory(board, convoys, b.id, is_session, stamps, is_worker, verbs,
                                                        extras),
                              keep_entries=KEPT_WITH_FILES, forgotten=lambda directory: stamps.forget(directory.key),
                              changed=Replaced(board.by_id(), board.replacements).look)
    if objects is not None:
        objects.append(beads)
    files = [
        CtlFile("ctl", "beads/ctl", CommandTable([
            Command("new", lambda args: _new_bead(board, args), BEAD_NEW, min_words=3, max_words=None,
                    options=frozenset({"requires_approval", "convoy"}), repeatable=frozenset({"owns"})),
        ]), readable=True),
        _drawn(board, TextFile("list", "beads/list", board.view.list_text)),
        _drawn(board, TextFile("ready", "beads/ready", board.view.ready_text)),
        _drawn(board, TextFile("graph", "beads/graph", board.view.graph_text)),
        *extras.beside,
    ]
    return Directory("beads", "beads", files, more=more, find=find)


def _drawn(board: Board, file: TextFile) -> TextFile:
    """A file drawn from all beads: it moves at the board's changes that change it, its mtime the board's then."""
    return follows(file, lambda: board.changes.version, lambda: board.changed_at)


class _ReadyFiles:
    """`ready.<role>`, kept for each role some bead has. Any other name finds a file too, empty, made for
    each walk of it (kept, they would fill memory): until a bead has its role, it has the stamp of a file
    that never changed."""

    def __init__(self, board: Board):
        self.board, self.made, self._kept = board, now(), {}

    def file(self, role: str) -> TextFile:
        file = self._kept.get(role)
        if file is None:
            file = TextFile(f"ready.{role}", f"beads/ready.{role}", lambda: self.board.view.ready_text(role))
            if role in self.board.roles():
                file = self._kept[role] = _drawn(self.board, file)
            else:
                file.stamp = lambda: self.file(role).stamp() if role in self.board.roles() else (0, self.made)
        return file


def _new_bead(board: Board, args: Args) -> str:
    title, role, description, *deps = args.words
    for dep in deps:
        if "=" in dep:
            raise InvalidRequest(f"new: unknown option {dep.partition('=')[0]}=; options: requires_approval=true, "
                                 "owns=GLOB (repeatable), convoy=ID")
    approval = args.options.get("requires_approval", "false")
    if approval not in ("true", "false"):
        raise InvalidRequest(f"new: requires_approval={approval}: write requires_approval=true or false")
    bead = board.new(title, role, description, deps, requires_approval=approval == "true",
                     owns=args.options.get("owns", []), convoy=args.options.get("convoy", ""))
    return bead.id


def _quiet(action):
    """A ctl command whose read-back is empty: run the domain verb, drop what it returns."""
    def run(args: Args) -> None:
        action(args)
    return run


def _text_of(value: str) -> str:
    return value + "\n" if value and not value.endswith("\n") else value


def _bead_directory(board: Board, convoys: Convoys, bead_id: str, is_session, stamps: Stamps,
                    is_worker, verbs: BeadVerbs, extras: Extras) -> Directory:
    """Its files are made when first walked to or listed: `ls beads/` makes no bead's files."""
    return Directory(bead_id, f"bead/{bead_id}",
                     lambda: _bead_files(board, convoys, bead_id, is_session, stamps, is_worker, verbs)
                     + extras.files(bead_id))


def _bead_files(board: Board, convoys: Convoys, bead_id: str, is_session, stamps: Stamps, is_worker,
                verbs: BeadVerbs) -> list:
    key = f"bead/{bead_id}"

    def own(file):
        """A file of one of the bead's fields: it moves when that field does (at a change of the board), its
        mtime the bead's `updated` then."""
        return stamps.follow(file, lambda: board.changes.version, lambda: _updated(board.get(bead_id)))

    def field(name: str, render) -> TextFile:
        return own(TextFile(name, f"{key}/{name}", lambda: _text_of(render(board.get(bead_id)))))

    def writable(name: str) -> CollectFile:
        """`description` and `result`: what one open writes replaces the field, at close."""
        def read_back():
            return _text_of(getattr(board.get(bead_id), name))
        return own(CollectFile(
            name, f"{key}/{name}",
            # the holder's rule at the writes only: the open (size 0) may be a read, which anyone may do
            check=lambda size, caller: (size and _check_holder(board, bead_id, caller, is_worker, name),
                                        _check_size(board, bead_id, name, size)),
            submit=lambda data, caller: board.set_text(bead_id, name, decoded_text(data, f"{name} of bead {bead_id}"),
                                                       by=who(caller, is_session).session or ""),
            abandoned=lambda data, caller: None, render=read_back))

    def context() -> str:
        bead = board.get(bead_id)
        convoy = _convoy_of(bead, convoys)
        parts = [convoy.context] if convoy is not None and convoy.context else []
        return "".join(_text_of(p) for p in parts + [bead.description])

    # the bead's description and its convoy's context: it moves with either
    context_file = stamps.follow(TextFile("context", f"{key}/context", context),
                                 lambda: (board.changes.version, convoys.version), lambda: _context_updated(board, convoys, bead_id))
    files = [
        field("status", lambda b: b.status.value),
        field("title", lambda b: b.title),
        writable("description"),
        field("role", lambda b: b.role),
        field("assigned_to", lambda b: b.assigned_to),
        writable("result"),
        field("review", lambda b: b.review),
        field("depends_on", lambda b: "\n".join(b.depends_on)),
        field("owns", lambda b: "\n".join(b.owns)),
        field("convoy", lambda b: b.convoy),
        field("requires_approval", lambda b: "true" if b.requires_approval else "false"),
        field("branch", lambda b: verbs.branch(b.id)),  # set by a worktree session's claim, which moves the bead
        context_file,
        CtlFile("ctl", f"{key}/ctl", lambda: _bead_commands(board, bead_id, is_session, is_worker, verbs)),
    ]
    return files


def _updated(thing: Bead | Convoy) -> int:
    """A bead's or convoy's last change (its `updated`): the mtime of its files that the change changed."""
    return epoch(thing.updated or thing.created)


def _context_updated(board: Board, convoys: Convoys, bead_id: str) -> int:
    """A bead's `context` is its convoy's context and its description: the later of their changes."""
    bead = board.get(bead_id)
    convoy = _convoy_of(bead, convoys)
    return max(_updated(bead), _updated(convoy) if convoy is not None else 0)


def _convoy_of(bead: Bead, convoys: Convoys) -> Convoy | None:
    return convoys.find(bead.convoy) if bead.convoy else None


def _check_size(board: Board, bead_id: str, what: str, size: int) -> None:
    board.get(bead_id)
    if size > MAX_TEXT:
        raise InvalidRequest(f"{what} of bead {bead_id} would be {size} bytes; at most {MAX_TEXT}")


def _bead_commands(board: Board, bead_id: str, is_session, is_worker, verbs: BeadVerbs) -> CommandTable:
    def rest(args: Args) -> str:
        return " ".join(args.words)

    def holding(verb: str, action):
        """VERB as the bead's holder would do it; an agent's own name goes into the history's message."""
        def run(args: Args) -> None:
            _check_holder(board, bead_id, args.caller, is_worker, verb)
            action(args, who(args.caller, is_session).session or "")
        return run

    def claim(args: Args) -> None:
        lease = args.options.get("lease")
        if lease is not None and not (lease.isascii() and lease.isdigit()):  # str.isdigit() takes "²" and "٣"
            raise InvalidRequest(f"claim: lease={lease}: give whole seconds in the digits 0-9, e.g. lease=600")
        named = args.words[0] if args.words else None
        if named is not None and args.caller is not None and named != args.caller.uname and is_worker(args.caller.uname):
            raise NotPermitted(f"claim: session {args.caller.uname}'s agent claims for itself: write claim alone")
        verbs.claim(bead_id, who(args.caller, is_session), args.words[0] if args.words else None,
                    int(lease) if lease is not None else None)

    return CommandTable([
        Command("claim", claim, "claim [<session>] [lease=SECONDS]", max_words=1, options=frozenset({"lease"})),
        Command("unclaim", _quiet(holding("unclaim", lambda args, by: board.unclaim(bead_id))), "unclaim"),
        Command("complete", _quiet(holding("complete", lambda args, by: verbs.complete(
            bead_id, rest(args) if args.words else None, by))), "complete [result | no-change: REASON]",
                max_words=None),
        Command("fail", _quiet(holding("fail", lambda args, by: board.fail(bead_id, rest(args), by=by))),
                "fail <reason>", min_words=1, max_words=None),
        Command("approve", _quiet(lambda args: board.approve(bead_id, who(args.caller, is_session))), "approve"),
        Command("reject", _quiet(lambda args: board.reject(bead_id, rest(args), who(args.caller, is_session))),
                "reject <reason>", min_words=1, max_words=None),
        Command("reopen", _quiet(lambda args: board.reopen(bead_id)), "reopen"),
    ])


def convoys_directory(convoys: Convoys, objects: list[ObjectDirectories] | None = None,
                      extras: Extras = NO_EXTRAS) -> Directory:
    """A convoy's files move when what they show does: its fields at a change of the convoy, the files drawn
    from its beads (`beads`, `progress`, its line of `list`) at a change of the board."""
    board, stamps = convoys.board, Stamps()  # a convoy's directory is built again at each change of the convoy

    tally: list[dict] = [{}, {}]  # convoys.tallies() of the listing being made: read once, not once a convoy

    def shows(c: Convoy) -> tuple:
        return c.id, c.status, c.coordinator, c.title, tally[0].get(c.id, 0), len(tally[1].get(c.id, ()))

    def line(c: Convoy) -> str:
        ident, status, coordinator, title, done, total = shows(c)  # what it shows, and nothing else
        return f"{ident} {status} {done}/{total} {coordinator or '-'} {title}\n"
    lines = KeptLines(shows, line)  # a convoy's line made again only when it or its beads' counts changed

    def listing() -> str:
        tally[:] = convoys.tallies()
        return lines.text(convoys.all()) + "".join(f"{i} broken - - {why}\n" for i, why in convoys.broken.items())

    dirs = ObjectDirectories(convoys.find, convoys.all, lambda c: c.id,
                             lambda c: _convoy_directory(convoys, c.id, stamps, extras),
                             keep_entries=KEPT_WITH_FILES, forgotten=lambda directory: stamps.forget(directory.key))
    if objects is not None:
        objects.append(dirs)
    files = [
        CtlFile("ctl", "convoys/ctl", CommandTable([
            Command("new", lambda args: convoys.new(*args.words).id, CONVOY_NEW, min_words=2, max_words=2),
        ]), readable=True),
        follows(TextFile("list", "convoys/list", listing), lambda: (board.changes.version, convoys.version),
                lambda: max(board.changed_at, convoys.changed_at)),
        *extras.beside,
    ]
    return Directory("convoys", "convoys", files, more=dirs.children, find=dirs.lookup)


def _convoy_directory(convoys: Convoys, convoy_id: str, stamps: Stamps, extras: Extras) -> Directory:
    """Its files are made when first walked to or listed, as a bead's."""
    return Directory(convoy_id, f"convoy/{convoy_id}",
                     lambda: _convoy_files(convoys, convoy_id, stamps, extras) + extras.files(convoy_id))


def _convoy_files(convoys: Convoys, convoy_id: str, stamps: Stamps, extras: Extras) -> list:
    key = f"convoy/{convoy_id}"
    board = convoys.board

    def own(file):
        """A file of one of the convoy's own fields: it moves when that field does, its mtime the convoy's
        `updated` then."""
        return stamps.follow(file, lambda: convoys.version, lambda: _updated(convoys.get(convoy_id)))

    def drawn(file: TextFile) -> TextFile:
        """`beads` and `progress` come from its beads' fields: they move at the board's changes that change them."""
        return stamps.follow(file, lambda: board.changes.version, lambda: board.changed_at)

    def field(name: str, render) -> TextFile:
        return own(TextFile(name, f"{key}/{name}", lambda: _text_of(render(convoys.get(convoy_id)))))

    files = [
        field("title", lambda c: c.title),
        field("goal", lambda c: c.goal),
        field("status", lambda c: c.status),
        field("coordinator", lambda c: c.coordinator),
        drawn(TextFile("beads", f"{key}/beads", lambda: "".join(f"{b.id}\n" for b in convoys.beads_of(convoy_id)))),
        own(CollectFile("context", f"{key}/context",
                        check=lambda size, caller: _check_convoy_size(convoys, convoy_id, size),
                        submit=lambda data, caller: convoys.set_context(convoy_id, decoded_text(data, f"context of convoy {convoy_id}")),
                        abandoned=lambda data, caller: None,
                        render=lambda: _text_of(convoys.get(convoy_id).context))),
        drawn(TextFile("progress", f"{key}/progress", lambda: convoys.progress(convoy_id) + "\n")),
        CtlFile("ctl", f"{key}/ctl", lambda: CommandTable([
            Command("add_bead", lambda args: convoys.add_bead(convoy_id, args.words[0]), "add_bead <id>", min_words=1, max_words=1),
            Command("remove_bead", lambda args: convoys.remove_bead(convoy_id, args.words[0]), "remove_bead <id>",
                    min_words=1, max_words=1),
            Command("coordinator", _quiet(lambda args: convoys.set_coordinator(convoy_id, args.words[0])),
                    "coordinator <session>", min_words=1, max_words=1),
            Command("complete", _quiet(lambda args: convoys.complete(convoy_id)), "complete"),
            Command("abandon", _quiet(lambda args: convoys.abandon(convoy_id)), "abandon"),
            *extras.commands(convoy_id),
        ])),
    ]
    return files


def _check_convoy_size(convoys: Convoys, convoy_id: str, size: int) -> None:
    convoys.get(convoy_id)
    if size > MAX_TEXT:
        raise InvalidRequest(f"context of convoy {convoy_id} would be {size} bytes; at most {MAX_TEXT}")
