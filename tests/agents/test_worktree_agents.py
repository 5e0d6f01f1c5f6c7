"""Issue 31 with real agents: five worktree sessions on one repository, real git, a real Claude Code among them.

Two sim sessions write their files with `sim:write` prompts; two external
sessions have the test as their agent (it takes their prompts from `next`,
edits their worktrees and answers on `out`); one Claude Code (the built-in
`claude` backend, against the Anthropic stub) works the board by itself: its
scripted model lists the ready beads, claims one with anvilfs's `claim`
tool, asks `my_work` where it works, writes a file there with Claude Code's
own Write tool, and completes the bead with `complete`. The backend lets it:
`--permission-mode acceptEdits` allows Write and Edit inside its cwd (the
worktree), `--allowedTools` the anvilfs tools and Bash for `anvilfs VERB`
only, so Bash could not write the file (test_claude.py shows both).

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


def test_five_worktree_sessions_one_repository_a_conflict_reworked_and_everything_merged(stub, tmp_path):
    repo = make_repo(tmp_path / "repo")
    state: dict = {}
    plans = bot_plan(state)
    with tools_server(stub, plans) as srv:
        paths = {name: new_worktree_session(srv, "sim", repo, name) for name in ("sim1", "sim2")}
        paths |= {name: new_worktree_session(srv, "external", repo, name) for name in ("ext1", "ext2")}
        paths["bot"] = new_worktree_session(srv, "claude", repo, "bot", "role=developer")
        assert len(set(paths.values())) == 5 and all(git(p, "rev-parse", "--show-toplevel") == p
                                                     for p in paths.values()), paths
        bot_bead = new_bead(srv, 'new "Bot notes" developer "Write bot/notes.txt"')
        beads = {name: new_bead(srv, f'new "{name} part" dev "the part of {name}"') for name in paths if name != "bot"}
        work, tips = {}, {}

        def complete(name: str, file: str, text: str) -> None:  # the conductor completes what its agent left
            bead = beads[name]
            cli(srv, "write", f"agent/beads/{bead}/ctl", "complete done")
            # the queue may have merged it, or sent it back, by now
            assert bead_field(srv, bead, "status") == "completed" or merge_state(srv, bead) == "conflict"
            work[bead] = (file, text)
            tips[bead] = own_commit(paths[name], name)

        # the sims: claimed for them by the conductor, their agent writes with sim:write
        for name in ("sim1", "sim2"):
            cli(srv, "write", f"agent/beads/{beads[name]}/ctl", f"claim {name}")
            assert cli(srv, "read", f"agent/{name}/branch") == f"anvil/bead/{beads[name]}\n"
            out = turn(srv, name, f"sim:write {name}/part.txt the part of {name}")
            assert f"[simulated] wrote {name}/part.txt" in out, out
            complete(name, f"{name}/part.txt", f"the part of {name}\n")

        # the externals: the test is their agent; both rewrite line two of shared.txt, on branches made from
        # one tip of main (both claimed before either completes: a later claim would start from the first's merge)
        for name in ("ext1", "ext2"):
            cli(srv, "write", f"agent/beads/{beads[name]}/ctl", f"claim {name}")
        for name in ("ext1", "ext2"):
            text = f"one\nTWO by {name}\nthree\n"
            external_turn(srv, name, f"rewrite line two of {SHARED}",
                          lambda name=name, text=text: (write(os.path.join(paths[name], SHARED), text),
                                                        f"{name}: line two rewritten")[1])
            complete(name, SHARED, text)
        first, second = beads["ext1"], beads["ext2"]

        # the bot: one prompt, and it does the rest through its tools, in its own worktree, while the queue merges
        out = turn(srv, "bot", "work on your bead")
        assert state.get("claimed") == bot_bead, (state, out)
        assert f"branch: anvil/bead/{bot_bead}" in state["my_work"], state["my_work"]
        assert cwd_of(state["my_work"]) == paths["bot"]
        assert bead_field(srv, bot_bead, "status") == "completed", cli(srv, "read", "agent/beads/list")
        assert bead_field(srv, bot_bead, "assigned_to") == "bot"
        assert plans.unoffered == []
        assert out.startswith("[stub anthropic] work on your bead: done"), out
        work[bot_bead] = ("bot/notes.txt", "written by Claude Code in its worktree\n")
        tips[bot_bead] = own_commit(paths["bot"], "bot")

        # the queue: all but the second of the same-line edits merged, that one sent back
        merged = [bead for bead in work if bead != second]
        for bead in merged:
            until(srv, lambda bead=bead: merge_state(srv, bead) == "merged", f"merge of {bead}")
        until(srv, lambda: merge_state(srv, second) == "conflict", f"conflict of {second}")
        assert SHARED in merge_detail(srv, second), merge_detail(srv, second)
        assert bead_field(srv, second, "status") == "pending"
        requests = [m for m in inbox(srv, "ext2") if m["type"] == "REWORK_REQUEST"]
        assert len(requests) == 1, requests
        (request,) = requests
        assert (request["from"], request["bead"]) == ("anvilfs", second), request
        assert SHARED in request["body"], request["body"]
        assert git(repo, "show", f"main:{SHARED}") + "\n" == work[first][1]
        for bead in merged:  # REPO's checkout followed the base, and is clean
            name, text = work[bead]
            assert Path(repo, name).read_text() == text, name
        assert status(repo) == "" and mid_operation(repo) == []
        assert all(status(path) == "" and mid_operation(path) == [] for path in paths.values()), paths

        # ext2's agent reads its mail, claims the bead again itself, meets the markers, resolves, completes
        shown = {}

        def rework() -> str:
            as_agent(srv, "ext2", "write", f"agent/beads/{second}/ctl", "claim")
            shown["text"] = Path(paths["ext2"], SHARED).read_text()
            write(os.path.join(paths["ext2"], SHARED), "one\nTWO by ext1 and ext2\nthree\n")
            as_agent(srv, "ext2", "write", f"agent/beads/{second}/ctl", "complete resolved")
            return "ext2: conflict resolved"

        external_turn(srv, "ext2", f"REWORK_REQUEST {request['id']}: {request['subject']}", rework)
        text = shown["text"]
        assert "<<<<<<<" in text and ">>>>>>>" in text, text
        assert "TWO by ext1" in text and "TWO by ext2" in text, text
        assert bead_field(srv, second, "assigned_to") == "ext2"
        resolved = own_commit(paths["ext2"], "ext2")
        work[second] = (SHARED, "one\nTWO by ext1 and ext2\nthree\n")
        until(srv, lambda: merge_state(srv, second) == "merged", f"merge of the resolved {second}")

        # what the issue asks of the repository
        for bead, (name, text) in work.items():  # ext1's line two is the resolution's now
            if bead != first:
                assert Path(repo, name).read_text() == text, f"REPO's checkout lacks {bead}'s {name}"
        subjects = git(repo, "log", "--format=%s", "main").splitlines()
        for bead in work:
            assert sum(subject.startswith(f"{bead}:") for subject in subjects) == 1, (bead, subjects)
        check_repository(repo, work, tips | {second: resolved})  # linear, fsck, every worktree clean, work kept
        assert kept(repo, tips[second], f"refs/heads/anvil/bead/{second}"), "the first try of the reworked bead"
        for path in [repo, *paths.values()]:
            assert status(path) == "" and mid_operation(path) == [], (path, status(path), mid_operation(path))
        listing = cli(srv, "read", "agent/worktrees").splitlines()
        for name, path in paths.items():  # each session still in its own worktree, the bead's branch let go
            assert f"{path} {name} (detached) active" in listing, listing
        assert cli(srv, "read", "agent/errors") == ""
    results = tool_results(main_requests(stub)[-1])  # what the bot's tools told its model, in order
    assert [error for _, error in results] == [False] * 5, results
    ready, claimed, _, wrote, completed = (text for text, _ in results)
    assert ready.splitlines()[1].startswith(f"{bot_bead} pending developer"), ready
    assert claimed.startswith(f"claimed {bot_bead} for bot"), claimed
    assert wrote.startswith("File created successfully"), wrote
    assert completed.startswith(f"{bot_bead}: completed"), completed

