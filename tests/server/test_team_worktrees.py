"""Worktree sessions on one repository through a real `anvilfs serve` (issue 31): the files and verbs of
docs/worktrees.md, with real git. The test plays the agents: it writes files in their worktrees, as an agent
CLI would, and drives beads through their ctl files like a conductor."""

from __future__ import annotations

import json
import os
import time

import pytest

from harness.server import anvil_server
from harness.worktrees import check_repository, git, make_repo, mid_operation, status, write

DEADLINE = 60  # seconds for the queue to merge what was queued: far beyond what it needs here

pytestmark = pytest.mark.timeout(300)


class Team:
    def __init__(self, srv, repo: str):
        self.srv, self.repo = srv, repo

    def write(self, path: str, text: str) -> tuple[int, str]:
        done = self.srv.run_cli("write", path, text)
        return done.returncode, done.stderr.strip()

    def ok(self, path: str, text: str) -> None:
        rc, err = self.write(path, text)
        assert rc == 0, f"{path} <- {text!r}: {err}\n{self.read('agent/errors')}"

    def read(self, path: str) -> str:
        done = self.srv.run_cli("read", path)
        assert done.returncode == 0, f"read {path}: {done.stderr}"
        return done.stdout

    def session(self, name: str, **options: str) -> str:
        extra = "".join(f" {k}={v}" for k, v in options.items())
        self.ok("agent/ctl", f"new sim {self.repo} worktree name={name}{extra}")
        return self.read(f"agent/{name}/worktree").strip()

    def bead(self, title: str) -> str:
        before = self.ids()
        self.ok("agent/beads/ctl", f"new '{title}' dev 'do {title}'")
        (bead,) = self.ids() - before
        return bead

    def ids(self) -> set[str]:
        return {line.split()[0] for line in self.read("agent/beads/list").splitlines()}

    def until(self, predicate, what: str):
        deadline = time.monotonic() + DEADLINE
        while not (found := predicate()):
            assert time.monotonic() < deadline, f"no {what} within {DEADLINE} s:\n{self.read('agent/merges/list')}"
            time.sleep(0.05)  # poll interval, bounded by the deadline
        return found

    def entry(self, bead: str) -> list[str]:
        return next((line.split(" ", 3) for line in self.read("agent/merges/list").splitlines()
                     if line.split()[0] == bead), [])

    def state_of(self, bead: str) -> str:
        entry = self.entry(bead)
        return entry[2] if entry else ""

    def merged(self, bead: str) -> bool:
        return self.state_of(bead) == "merged"

    def inbox(self, name: str) -> list[dict]:
        names = self.srv.run_cli("ls", f"agent/{name}/inbox").stdout.split()
        return [json.loads(self.read(f"agent/{name}/inbox/{n}")) for n in sorted(names)]


@pytest.fixture
def team(anvil_server, tmp_path) -> Team:
    return Team(anvil_server, make_repo(tmp_path / "repo"))


def test_beads_worked_in_worktrees_are_merged_one_by_one_and_the_repository_follows(team):
    paths = {name: team.session(name) for name in ("dev1", "dev2", "dev3")}
    assert team.read("agent/dev1/cwd").strip() == paths["dev1"] == os.path.join(
        os.path.dirname(paths["dev1"]), "dev1")
    assert team.read("agent/dev1/branch") == "anvil/session/dev1\n"
    work, tips = {}, {}
    for n, name in enumerate(paths, 1):
        bead = team.bead(f"part{n} of the work")
        team.ok(f"agent/beads/{bead}/ctl", f"claim {name}")
        assert team.read(f"agent/beads/{bead}/branch") == f"anvil/bead/{bead}\n"
        assert team.read(f"agent/{name}/branch") == f"anvil/bead/{bead}\n"
        write(os.path.join(paths[name], f"part{n}.txt"), f"part {n}\n")  # the agent's edit, left uncommitted
        team.ok(f"agent/beads/{bead}/ctl", "complete done")
        work[bead] = (f"part{n}.txt", f"part {n}\n")
        tips[bead] = git(team.repo, "rev-parse", f"anvil/bead/{bead}")
        assert team.read(f"agent/{name}/branch") == "(detached)\n"
    for bead in work:
        team.until(lambda: team.merged(bead), f"merge of {bead}")
    # anvilfs committed what each agent left, as the session; REPO's checkout followed main, clean
    for bead, (name, text) in work.items():
        assert open(os.path.join(team.repo, name)).read() == text
    assert git(team.repo, "log", "--format=%an", "-3", "main").split() == ["dev3", "dev2", "dev1"] or \
        sorted(git(team.repo, "log", "--format=%an", "-3", "main").split()) == ["dev1", "dev2", "dev3"]
    check_repository(team.repo, work, tips)
    assert status(team.repo) == ""
    listing = team.read("agent/worktrees")
    assert all(f"{path} {name} (detached) active" in listing for name, path in paths.items()), listing


def test_a_conflict_sends_the_bead_back_with_a_rework_request_and_its_next_claim_shows_the_markers(team):
    one, two = team.session("dev1"), team.session("dev2")
    first, second = team.bead("first edit"), team.bead("second edit")
    team.ok(f"agent/beads/{first}/ctl", "claim dev1")
    team.ok(f"agent/beads/{second}/ctl", "claim dev2")
    write(os.path.join(one, "shared.txt"), "one\nTWO by dev1\nthree\n")
    write(os.path.join(two, "shared.txt"), "one\nTWO by dev2\nthree\n")
    team.ok(f"agent/beads/{first}/ctl", "complete")
    team.until(lambda: team.merged(first), "merge of the first")
    team.ok(f"agent/beads/{second}/ctl", "complete")
    team.until(lambda: team.state_of(second) == "conflict", "conflict of the second")

    assert team.read(f"agent/beads/{second}/status") == "pending\n"
    assert "shared.txt" in team.entry(second)[3]
    (request,) = [m for m in team.inbox("dev2") if m["type"] == "REWORK_REQUEST"]
    assert request["from"] == "anvilfs" and request["bead"] == second and "shared.txt" in request["body"]
    assert git(team.repo, "show", "main:shared.txt") == "one\nTWO by dev1\nthree"
    assert status(team.repo) == "" and mid_operation(team.repo) == []

    team.ok(f"agent/beads/{second}/ctl", "claim dev2")  # the kept branch, with main merged in: markers
    text = open(os.path.join(two, "shared.txt")).read()
    assert "<<<<<<<" in text and "TWO by dev1" in text and "TWO by dev2" in text, text
    rc, err = team.write(f"agent/beads/{second}/ctl", "complete")
    assert rc != 0 and "conflict markers" in err, err  # refused while a file carries them
    write(os.path.join(two, "shared.txt"), "one\nTWO by both\nthree\n")
    team.ok(f"agent/beads/{second}/ctl", "complete resolved")
    team.until(lambda: team.merged(second), "merge of the resolved second")
    assert git(team.repo, "show", "main:shared.txt") == "one\nTWO by both\nthree"
    assert open(os.path.join(team.repo, "shared.txt")).read() == "one\nTWO by both\nthree\n"
    assert git(team.repo, "rev-list", "--merges", "main") == ""


def test_local_changes_in_the_repository_block_the_entry_and_stay_untouched(team):
    path = team.session("dev1")
    bead = team.bead("blocked edit")
    team.ok(f"agent/beads/{bead}/ctl", "claim dev1")
    write(os.path.join(path, "README"), "hello from dev1\n")
    write(os.path.join(team.repo, "README"), "the user's own edit\n")  # uncommitted, on main
    team.ok(f"agent/beads/{bead}/ctl", "complete")
    team.until(lambda: team.state_of(bead) == "blocked", "the entry blocked")
    assert "local changes" in team.entry(bead)[3], team.entry(bead)
    assert open(os.path.join(team.repo, "README")).read() == "the user's own edit\n"
    assert git(team.repo, "show", "main:README") == "hello"
    git(team.repo, "checkout", "--", "README")  # the user puts it away
    team.ok("agent/merges/ctl", f"retry {bead}")
    team.until(lambda: team.merged(bead), "merge once the repository is clean")
    assert open(os.path.join(team.repo, "README")).read() == "hello from dev1\n"


def test_remove_keeps_unmerged_work_and_prune_removes_only_the_merged(team):
    kept, gone = team.session("keeper"), team.session("done1")
    unfinished, finished = team.bead("unfinished work"), team.bead("finished work")
    team.ok(f"agent/beads/{unfinished}/ctl", "claim keeper")
    write(os.path.join(kept, "draft.txt"), "half done\n")
    team.ok(f"agent/beads/{finished}/ctl", "claim done1")
    write(os.path.join(gone, "final.txt"), "done\n")
    team.ok(f"agent/beads/{finished}/ctl", "complete")
    team.until(lambda: team.merged(finished), "merge of the finished bead")
    for name in ("keeper", "done1"):
        team.ok(f"agent/{name}/ctl", "stop")
        team.ok(f"agent/{name}/ctl", "remove")
    # the stop released the bead: its work was committed on its branch, the worktree detached at it
    assert git(team.repo, "show", f"anvil/bead/{unfinished}:draft.txt") == "half done"
    team.until(lambda: f"{kept} keeper (detached) unmerged" in team.read("agent/worktrees"),
               "the kept worktree listed unmerged")
    team.until(lambda: f"{gone} " not in team.read("agent/worktrees"), "the merged worktree removed at remove")
    assert open(os.path.join(kept, "draft.txt")).read() == "half done\n"
    team.ok("agent/worktrees", "prune")
    assert os.path.exists(os.path.join(kept, "draft.txt")), "prune removed unmerged work"
    assert git(team.repo, "branch", "--list", f"anvil/bead/{unfinished}") != ""
    assert git(team.repo, "branch", "--list", f"anvil/bead/{finished}") == ""  # merged: pruned
    again = team.session("keeper")  # the name again: never the kept worktree or its branch
    assert again == kept + "@2" and team.read("agent/keeper/branch") == "anvil/session/keeper@2\n"
    assert open(os.path.join(kept, "draft.txt")).read() == "half done\n"


def test_a_bead_with_nothing_done_completes_only_as_no_change(team):
    team.session("dev1")
    bead = team.bead("nothing to do")
    team.ok(f"agent/beads/{bead}/ctl", "claim dev1")
    rc, err = team.write(f"agent/beads/{bead}/ctl", "complete looks fine")
    assert rc != 0 and "no-change: REASON" in err, err
    assert team.read(f"agent/beads/{bead}/status") == "in_progress\n"
    team.ok(f"agent/beads/{bead}/ctl", "complete no-change: it was fixed already")
    assert team.read(f"agent/beads/{bead}/status") == "completed\n"
    assert team.entry(bead) == []  # nothing to merge


@pytest.mark.parametrize("line, wanted", [
    ("new sim {repo} worktree name=a..b", "cannot make a git branch"),
    ("new sim {repo} worktree name=x.lock", "cannot make a git branch"),
    ("new sim {repo} worktree name=w1 base=-x", "not starting with '-'"),
    ("new sim {repo} worktree name=w2 base=nosuch", "is not a local branch"),
    ("new sim {tmp} worktree name=w3", "not in a git repository"),
    ("new sim {repo} name=w4 base=main", "base= goes with worktree"),
])
def test_new_worktree_refusals_say_what_to_do(team, tmp_path, line, wanted):
    rc, err = team.write("agent/ctl", line.format(repo=team.repo, tmp=tmp_path))
    assert rc != 0 and wanted in err, err
    assert team.read("agent/list") == ""
    assert not os.path.exists(os.path.join(os.path.dirname(team.repo), "state"))


def test_a_claim_for_a_worktree_session_holding_a_bead_is_refused(team):
    team.session("dev1")
    first, second = team.bead("first one"), team.bead("second one")
    team.ok(f"agent/beads/{first}/ctl", "claim dev1")
    rc, err = team.write(f"agent/beads/{second}/ctl", "claim dev1")
    assert rc != 0 and f"holds bead {first}" in err, err
    assert team.read(f"agent/beads/{second}/status") == "pending\n"


def test_unclaim_keeps_the_work_on_the_beads_branch_and_frees_the_worktree(team):
    path = team.session("dev1")
    first, second = team.bead("first one"), team.bead("second one")
    team.ok(f"agent/beads/{first}/ctl", "claim dev1")
    write(os.path.join(path, "x.txt"), "x\n")
    team.ok(f"agent/beads/{first}/ctl", "unclaim")  # answered once the work is committed on its branch
    assert git(team.repo, "show", f"anvil/bead/{first}:x.txt") == "x"
    assert team.read("agent/dev1/branch") == "(detached)\n" and status(path) == ""
    team.ok(f"agent/beads/{second}/ctl", "claim dev1")
    assert not os.path.exists(os.path.join(path, "x.txt")), "the second bead's branch has the first's work"


def test_a_bead_its_removed_worker_left_half_done_is_resumed_by_another_session(team):
    one = team.session("dev1")
    bead = team.bead("half done")
    team.ok(f"agent/beads/{bead}/ctl", "claim dev1")
    write(os.path.join(one, "half.txt"), "half\n")
    team.ok("agent/dev1/ctl", "stop")  # the bead goes back to pending; its work stays on its branch
    team.ok("agent/dev1/ctl", "remove")
    assert team.read(f"agent/beads/{bead}/status") == "pending\n"
    two = team.session("dev2")
    team.ok(f"agent/beads/{bead}/ctl", "claim dev2")
    assert open(os.path.join(two, "half.txt")).read() == "half\n"
    write(os.path.join(two, "rest.txt"), "rest\n")
    team.ok(f"agent/beads/{bead}/ctl", "complete")
    team.until(lambda: team.merged(bead), "merge of the finished bead")
    assert git(team.repo, "show", "main:half.txt") == "half" and git(team.repo, "show", "main:rest.txt") == "rest"
    # dev1's worktree was kept at its remove (uncommitted work); that work merged, it holds nothing now
    assert f"{one} dev1 (detached) merged" in team.read("agent/worktrees")
    team.ok("agent/worktrees", "prune")
    assert not os.path.exists(one) and f"{one} " not in team.read("agent/worktrees")


def test_a_bead_that_needs_approval_is_queued_only_once_approved(team):
    path = team.session("dev1")
    before = team.ids()
    team.ok("agent/beads/ctl", "new 'reviewed change' dev 'change it' requires_approval=true")
    (bead,) = team.ids() - before
    team.ok(f"agent/beads/{bead}/ctl", "claim dev1")
    write(os.path.join(path, "reviewed.txt"), "looked at\n")
    team.ok(f"agent/beads/{bead}/ctl", "complete")
    assert team.read(f"agent/beads/{bead}/status") == "pending_approval\n"
    assert team.entry(bead) == [], "queued before it was approved"
    team.ok(f"agent/beads/{bead}/ctl", "approve")
    team.until(lambda: team.merged(bead), "merge once approved")
    assert git(team.repo, "show", "main:reviewed.txt") == "looked at"


def test_a_dependent_bead_is_claimed_only_once_its_dependency_is_merged(team):
    one, two = team.session("dev1"), team.session("dev2")
    first = team.bead("schema change")
    before = team.ids()
    team.ok("agent/beads/ctl", f"new 'use the schema' dev 'build on it' {first}")
    (second,) = team.ids() - before
    team.ok(f"agent/beads/{first}/ctl", "claim dev1")
    write(os.path.join(one, "schema.txt"), "v2\n")
    write(os.path.join(team.repo, "README"), "the user's edit\n")  # holds the entry blocked
    team.ok(f"agent/beads/{first}/ctl", "complete")
    team.until(lambda: team.state_of(first) == "blocked", "the first entry blocked")
    rc, err = team.write(f"agent/beads/{second}/ctl", "claim dev2")
    assert rc != 0 and "not merged yet" in err, err
    git(team.repo, "checkout", "--", "README")
    team.ok("agent/merges/ctl", f"retry {first}")
    team.until(lambda: team.merged(first), "merge of the dependency")
    team.ok(f"agent/beads/{second}/ctl", "claim dev2")
    assert open(os.path.join(two, "schema.txt")).read() == "v2\n", "the new branch lacks its dependency's work"


def test_a_failing_gate_from_the_configuration_sends_the_bead_back_naming_the_gate(tmp_path):
    repo = make_repo(tmp_path / "repo")
    config = tmp_path / "config.toml"
    config.write_text(f'[repos."{repo}"]\ngates = [["test", "-f", "CHANGELOG"], ["sh", "-c", "echo gate ran; exit 3"]]\n')
    with anvil_server(extra_args=["--config", str(config)]) as srv:
        team = Team(srv, repo)
        path = team.session("dev1")
        bead = team.bead("gated change")
        team.ok(f"agent/beads/{bead}/ctl", "claim dev1")
        write(os.path.join(path, "CHANGELOG"), "a change\n")  # passes the first gate, not the second
        team.ok(f"agent/beads/{bead}/ctl", "complete")
        team.until(lambda: team.state_of(bead) == "gate-failed", "the gate to fail")
        assert team.read(f"agent/beads/{bead}/status") == "pending\n"
        (request,) = [m for m in team.inbox("dev1") if m["type"] == "REWORK_REQUEST"]
        assert "sh -c echo gate ran; exit 3" in request["body"] and "gate ran" in request["body"], request["body"]
        assert git(repo, "log", "--format=%s", "main") == "start", "a failing gate moved the base"
        assert status(repo) == ""


def test_a_claim_for_a_session_in_a_turn_is_refused_until_the_turn_ends(team):
    team.session("dev1")
    bead = team.bead("while busy")
    team.ok("agent/dev1/in", "sim:hang")
    team.until(lambda: team.read("agent/dev1/status").startswith("running"), "the turn to run")
    rc, err = team.write(f"agent/beads/{bead}/ctl", "claim dev1")
    assert rc != 0 and "running a turn" in err, err
    team.ok("agent/dev1/ctl", "interrupt")
    team.until(lambda: not team.read("agent/dev1/status").startswith("running"), "the turn to end")
    team.ok(f"agent/beads/{bead}/ctl", "claim dev1")
    assert team.read("agent/dev1/branch") == f"anvil/bead/{bead}\n"
