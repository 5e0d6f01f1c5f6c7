"""Worktree sessions and the merge queue as files (docs/worktrees.md):

    merges/list        BEAD BRANCH STATE DETAIL, one line per entry, in the queue's order
    merges/ctl         merge BEAD | retry BEAD | drop BEAD
    worktrees          PATH SESSION BRANCH STATE [WHY], one line per worktree anvilfs made; write `prune`
    NAME/worktree      a worktree session's worktree (its cwd); empty for another session
    NAME/branch        the branch its worktree has checked out, "(detached)" between beads
"""

from __future__ import annotations

from ..beads import Status
from ..errors import Busy, InvalidRequest, NotFound
from ..teamwork import Teamwork
from ..tree import Args, Caller, Command, CommandTable, CtlFile, Directory, Node, TextFile
from .stamps import follows


def merges_directory(teamwork: Teamwork) -> Directory:
    queue = teamwork.ws.queue

    def by_hand(args: Args) -> None:
        bead_id = args.words[0]
        bead = teamwork.board.get(bead_id)
        branch = teamwork.ws.bead(bead_id)
        if branch is None:
            raise NotFound(f"merge: bead {bead_id} has no branch (only a worktree session's claim makes one)")
        if bead.status is not Status.COMPLETED:
            raise Busy(f"merge: bead {bead_id} is {bead.status.value}; its branch is queued once it is completed")
        queue.queue(branch, "queued by hand")

    return Directory("merges", "merges", [
        follows(TextFile("list", "merges/list", queue.text), lambda: queue.changes.version),
        CtlFile("ctl", "merges/ctl", CommandTable([
            Command("merge", by_hand, "merge <bead>", min_words=1, max_words=1),
            Command("retry", lambda args: queue.retry(args.words[0]), "retry <bead>", min_words=1, max_words=1),
            Command("drop", lambda args: queue.drop(args.words[0]), "drop <bead>", min_words=1, max_words=1),
        ])),
    ])


def worktrees_file(teamwork: Teamwork) -> TextFile:
    ws = teamwork.ws

    def write(line: str, caller: Caller) -> None:
        if line != "prune":
            raise InvalidRequest(f"worktrees: write `prune` (it removes the merged and clean worktrees and the "
                                 f"merged branches); {line.split()[0]!r} is not a command")
        ws.answer_after(ws.prune)

    return follows(TextFile("worktrees", "worktrees", lambda: ws.listing, write), lambda: ws.changes.version)


def session_files(teamwork: Teamwork, name: str) -> list[Node]:
    ws = teamwork.ws

    def text(file: str, render) -> TextFile:
        return follows(TextFile(file, f"session/{name}/{file}", lambda: (render() + "\n") if render() else ""),
                       lambda: ws.changes.version)

    return [text("worktree", lambda: wt.path if (wt := ws.of(name)) else ""), text("branch", lambda: ws.branch_of(name))]
