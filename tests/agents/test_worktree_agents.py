"""Issue 31 with real agents: five worktree sessions on one repository, real git, a real Claude Code among them.

Two sim sessions write their files with `sim:write` prompts; two external
sessions have the test as their agent (it takes their prompts from `next`,
edits their worktrees and answers on `out`); one Claude Code (the built-in
`claude` backend, against the Anthropic stub) works the board by itself: its
scripted model lists the ready beads, claims one with anvilfs's `claim`
tool, asks `my_work` where it works, writes a file there with Claude Code's
own Write tool, and completes the bead with `complete`. The backend lets it:
`--permission-mode acceptEdits` (the built-in argv) allows Write and Edit
inside its cwd, the worktree; `--allowedTools` (backends/tools_claude.py)
adds the anvilfs tools and Bash for `anvilfs VERB` only, so Bash could not
have written the file (the refusals: test_claude.py, test_claude_tools.py).

The two external sessions edit the same line of one file: the queue merges
the other four, REPO's checkout follows, the second of the two goes back to
`pending` with a REWORK_REQUEST naming the file, its agent claims it again
(during a turn of its own), finds the markers, resolves and completes it,
and it is merged. Then the repository is checked as the issue asks.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from claude_env import main_requests
from claude_tools_script import Plans, bead_field, call, first_word, new_bead, tools_server
from drive import TURN_TIMEOUT, cli, turn
from harness.server import AnvilServer
from harness.worktrees import check_repository, git, kept, make_repo, mid_operation, status, write
from stubs import ToolCall
from stubs.anthropic import tool_results

MERGE_DEADLINE = 90  # s: the queue merging five small branches on a loaded 2-core machine, with a CLI running
SHARED = "shared.txt"  # make_repo's "one\ntwo\nthree\n": the externals both rewrite line two


def as_agent(srv: AnvilServer, name: str, *args: str) -> str:
    """`anvilfs ARGS` as session NAME's agent calls back (uname from ANVILFS_SESSION, as the backends set it)."""
    done = srv.run_cli(*args, env={"ANVILFS_SESSION": name}, timeout=TURN_TIMEOUT)
    assert done.returncode == 0, f"anvilfs {' '.join(args)} as {name} failed ({done.returncode}): {done.stderr}"
    return done.stdout


def until(srv: AnvilServer, check, what: str, timeout: float = MERGE_DEADLINE):
    """Poll the server (another process: nothing to block on) until check() holds, or fail saying what's there."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:g} s; merges:\n{cli(srv, 'read', 'agent/merges/list')}"
                                 f"errors:\n{cli(srv, 'read', 'agent/errors')}")
        time.sleep(0.05)  # poll interval, bounded by the deadline
    return found


def merge_state(srv: AnvilServer, bead: str) -> str:
    rows = [line.split(" ", 3) for line in cli(srv, "read", "agent/merges/list").splitlines()]
    return next((row[2] for row in rows if row[0] == bead), "")


def merge_detail(srv: AnvilServer, bead: str) -> str:
    rows = [line.split(" ", 3) for line in cli(srv, "read", "agent/merges/list").splitlines()]
    return next((row[3] for row in rows if row[0] == bead and len(row) == 4), "")


def inbox(srv: AnvilServer, name: str) -> list[dict]:
    names = sorted(cli(srv, "ls", f"agent/{name}/inbox").split())
    return [json.loads(cli(srv, "read", f"agent/{name}/inbox/{n}")) for n in names]


def new_worktree_session(srv: AnvilServer, backend: str, repo: str, name: str, *options: str) -> str:
    """`new BACKEND REPO worktree name=NAME ...`, started; the worktree's path."""
    cli(srv, "write", "agent/ctl", " ".join(["new", backend, repo, "worktree", f"name={name}", *options]))
    state = cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip()
    assert state in ("await", "idle"), f"session {name} started as {state!r}: " + cli(srv, "read", "agent/errors")
    path = cli(srv, "read", f"agent/{name}/worktree").strip()
    assert cli(srv, "read", f"agent/{name}/cwd").strip() == path and os.path.isdir(path), path
    assert cli(srv, "read", f"agent/{name}/branch") == f"anvil/session/{name}\n"
    return path


def external_turn(srv: AnvilServer, name: str, prompt: str, work) -> None:
    """A turn of external session NAME with the test as its agent: the prompt from `next`, work(), the answer."""
    cli(srv, "write", f"agent/{name}/in", prompt)
    taken = as_agent(srv, name, "read", f"agent/{name}/next")
    assert taken.strip() == prompt, taken
    assert cli(srv, "read", f"agent/{name}/status").split()[0] == "running"
    answer = work()
    as_agent(srv, name, "write", f"agent/{name}/out", answer)
    assert cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip() == "await"
    assert cli(srv, "read", f"agent/{name}/out").strip() == answer


def own_commit(worktree: str, session: str) -> str:
    """The commit `complete` made of what SESSION left: its worktree's HEAD, detached there (the queue moves the
    bead's branch, rebased, perhaps before the test looks), authored by the session."""
    assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD", f"{worktree} is not detached"
    assert git(worktree, "log", "-1", "--format=%an") == session
    return git(worktree, "rev-parse", "HEAD")


def cwd_of(my_work: str) -> str:
    """The cwd in the first line of the `my_work` tool's answer (`session NAME: STATE; role R; cwd PATH`)."""
    first = my_work.splitlines()[0]
    assert "; cwd " in first, f"no cwd in my_work's answer: {my_work!r}"
    return first.split("; cwd ", 1)[1]


def bot_plan(state: dict) -> Plans:
    """The Claude Code bot's model: it finds, claims, writes and completes its bead itself."""
    def claim(said: str) -> ToolCall:
        state["claimed"] = first_word(said)
        return call("claim", bead=state["claimed"])

    def write_there(said: str) -> ToolCall:
        state["my_work"] = said
        path = os.path.join(cwd_of(said), "bot", "notes.txt")
        return ToolCall("Write", {"file_path": path, "content": "written by Claude Code in its worktree\n"},
                        text="[stub anthropic] writing bot/notes.txt")

    return Plans({"work on your bead": [
        call("ready"),
        claim,
        call("my_work"),
        write_there,
        lambda said: call("complete", bead=state["claimed"], result="bot/notes.txt written"),
    ]})


class Team:
    """The five sessions on REPO, their beads, and what each bead's work is (`work`: bead -> (file, text)) and
    the commit anvilfs made of it (`tips`), for check_repository."""

    def __init__(self, srv: AnvilServer, repo: str):
        self.srv, self.repo = srv, repo
        self.paths = {name: new_worktree_session(srv, "sim", repo, name) for name in ("sim1", "sim2")}
        self.paths |= {name: new_worktree_session(srv, "external", repo, name) for name in ("ext1", "ext2")}
        self.paths["bot"] = new_worktree_session(srv, "claude", repo, "bot", "role=developer")
        assert len(set(self.paths.values())) == 5 and all(git(p, "rev-parse", "--show-toplevel") == p
                                                          for p in self.paths.values()), self.paths
        self.beads = {"bot": new_bead(srv, 'new "Bot notes" developer "Write bot/notes.txt"')}
        self.beads |= {name: new_bead(srv, f'new "{name} part" dev "the part of {name}"')
                       for name in self.paths if name != "bot"}
        self.work: dict[str, tuple[str, str]] = {}
        self.tips: dict[str, str] = {}

    def done(self, name: str, file: str, text: str) -> None:
        """NAME's bead is completed with FILE holding TEXT: the commit of it is its worktree's HEAD."""
        self.work[self.beads[name]] = (file, text)
        self.tips[self.beads[name]] = own_commit(self.paths[name], name)

    def complete(self, name: str, file: str, text: str) -> None:
        """The conductor completes NAME's bead, with what its agent left uncommitted."""
        bead = self.beads[name]
        cli(self.srv, "write", f"agent/beads/{bead}/ctl", "complete done")
        # the queue may have merged it, or sent it back, by now
        assert bead_field(self.srv, bead, "status") == "completed" or merge_state(self.srv, bead) == "conflict"
        self.done(name, file, text)

    def sims_write(self) -> None:
        """Claimed for them by the conductor; their agent writes with sim:write."""
        for name in ("sim1", "sim2"):
            cli(self.srv, "write", f"agent/beads/{self.beads[name]}/ctl", f"claim {name}")
            assert cli(self.srv, "read", f"agent/{name}/branch") == f"anvil/bead/{self.beads[name]}\n"
            out = turn(self.srv, name, f"sim:write {name}/part.txt the part of {name}")
            assert f"[simulated] wrote {name}/part.txt" in out, out
            self.complete(name, f"{name}/part.txt", f"the part of {name}\n")

    def externals_edit_one_line(self) -> None:
        """The test is their agent; both rewrite line two of SHARED, on branches made from one tip of main (both
        claimed before either completes: a later claim would start from the first one's merge)."""
        for name in ("ext1", "ext2"):
            cli(self.srv, "write", f"agent/beads/{self.beads[name]}/ctl", f"claim {name}")
        for name in ("ext1", "ext2"):
            text = f"one\nTWO by {name}\nthree\n"

            def edit(name=name, text=text) -> str:
                write(os.path.join(self.paths[name], SHARED), text)
                return f"{name}: line two rewritten"

            external_turn(self.srv, name, f"rewrite line two of {SHARED}", edit)
            self.complete(name, SHARED, text)

    def bot_works(self, plans: Plans, state: dict) -> None:
        """One prompt, and the bot does the rest through its tools, in its own worktree, while the queue merges."""
        out = turn(self.srv, "bot", "work on your bead")
        bead = self.beads["bot"]
        assert state.get("claimed") == bead, (state, out)
        assert f"branch: anvil/bead/{bead}" in state["my_work"], state["my_work"]
        assert cwd_of(state["my_work"]) == self.paths["bot"]
        assert bead_field(self.srv, bead, "status") == "completed", cli(self.srv, "read", "agent/beads/list")
        assert bead_field(self.srv, bead, "assigned_to") == "bot"
        assert plans.unoffered == []
        assert out.startswith("[stub anthropic] work on your bead: done"), out
        self.done("bot", "bot/notes.txt", "written by Claude Code in its worktree\n")

    def sent_back(self, first: str, second: str) -> dict:
        """All but SECOND merged, REPO following, clean; SECOND pending, its worker's REWORK_REQUEST naming SHARED."""
        for bead in self.work:
            if bead != second:
                until(self.srv, lambda bead=bead: merge_state(self.srv, bead) == "merged", f"merge of {bead}")
        until(self.srv, lambda: merge_state(self.srv, second) == "conflict", f"conflict of {second}")
        assert SHARED in merge_detail(self.srv, second), merge_detail(self.srv, second)
        assert bead_field(self.srv, second, "status") == "pending"
        requests = [m for m in inbox(self.srv, "ext2") if m["type"] == "REWORK_REQUEST"]
        assert len(requests) == 1, requests
        (request,) = requests
        assert (request["from"], request["bead"]) == ("anvilfs", second), request
        assert SHARED in request["body"], request["body"]
        assert git(self.repo, "show", f"main:{SHARED}") + "\n" == self.work[first][1]
        for bead, (name, text) in self.work.items():  # REPO's checkout followed the base
            if bead != second:
                assert Path(self.repo, name).read_text() == text, name
        self.all_clean()
        return request

    def rework(self, request: dict) -> None:
        """ext2's agent, prompted with its mail, claims the bead again itself, meets the markers, resolves them
        and completes."""
        second = self.beads["ext2"]
        resolution = "one\nTWO by ext1 and ext2\nthree\n"

        def resolve() -> str:
            as_agent(self.srv, "ext2", "write", f"agent/beads/{second}/ctl", "claim")
            text = Path(self.paths["ext2"], SHARED).read_text()
            assert "<<<<<<<" in text and ">>>>>>>" in text, text
            assert "TWO by ext1" in text and "TWO by ext2" in text, text
            write(os.path.join(self.paths["ext2"], SHARED), resolution)
            as_agent(self.srv, "ext2", "write", f"agent/beads/{second}/ctl", "complete resolved")
            return "ext2: conflict resolved"

        external_turn(self.srv, "ext2", f"REWORK_REQUEST {request['id']}: {request['subject']}", resolve)
        self.done("ext2", SHARED, resolution)
        assert bead_field(self.srv, second, "assigned_to") == "ext2"
        until(self.srv, lambda: merge_state(self.srv, second) == "merged", f"merge of the resolved {second}")

    def all_clean(self) -> None:
        for path in [self.repo, *self.paths.values()]:
            assert status(path) == "" and mid_operation(path) == [], (path, status(path), mid_operation(path))

    def check_the_repository(self, first_try: str) -> None:
        """What the issue asks: REPO has it all, each bead merged once, linear, fsck, everything kept and clean."""
        first = self.beads["ext1"]
        for bead, (name, text) in self.work.items():  # ext1's line two is the resolution's now
            if bead != first:
                assert Path(self.repo, name).read_text() == text, f"REPO's checkout lacks {bead}'s {name}"
        subjects = git(self.repo, "log", "--format=%s", "main").splitlines()
        for bead in self.work:
            assert sum(subject.startswith(f"{bead}:") for subject in subjects) == 1, (bead, subjects)
        check_repository(self.repo, self.work, self.tips)  # linear, fsck, every worktree clean, work kept
        second = self.beads["ext2"]
        assert kept(self.repo, first_try, f"refs/heads/anvil/bead/{second}"), "the first try of the reworked bead"
        self.all_clean()
        listing = cli(self.srv, "read", "agent/worktrees").splitlines()
        for name, path in self.paths.items():  # each session still in its own worktree, the bead's branch let go
            assert f"{path} {name} (detached) active" in listing, listing
        assert cli(self.srv, "read", "agent/errors") == ""


def test_five_worktree_sessions_one_repository_a_conflict_reworked_and_everything_merged(stub, tmp_path):
    state: dict = {}
    plans = bot_plan(state)
    with tools_server(stub, plans) as srv:
        team = Team(srv, make_repo(tmp_path / "repo"))
        team.sims_write()
        team.externals_edit_one_line()
        team.bot_works(plans, state)
        first, second = team.beads["ext1"], team.beads["ext2"]
        request = team.sent_back(first, second)
        first_try = team.tips[second]
        team.rework(request)
        team.check_the_repository(first_try)
    bot_bead = team.beads["bot"]
    results = tool_results(main_requests(stub)[-1])  # what the bot's tools told its model, in order
    assert [error for _, error in results] == [False] * 5, results
    ready, claimed, _, wrote, completed = (text for text, _ in results)
    assert ready.splitlines()[1].startswith(f"{bot_bead} pending developer"), ready
    assert claimed.startswith(f"claimed {bot_bead} for bot"), claimed
    assert wrote.startswith("File created successfully"), wrote
    assert completed.startswith(f"{bot_bead}: completed"), completed
