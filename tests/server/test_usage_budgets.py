"""What agents spend and the budgets that hold them (issue 34), through a real `anvilfs serve` and 9P clients.

The agents are sim's (they say so): a prompt's `sim:usage=IN,OUT[,USD]` makes its turn report those
simulated figures, so every sum below is known in advance. The real CLIs' reports are tested in tests/agents.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from anvilfs.client.client import ServerError
from harness.server import start_server

pytestmark = pytest.mark.timeout(240)
DEADLINE = 30.0


def figures(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines())


class Tree:
    """A server on a state directory that outlives it (restart keeps the state), and a client of it."""

    def __init__(self, base: Path):
        self.base, self.srv, self.client = base, None, None
        self.start()

    def start(self) -> None:
        self.srv = start_server(self.base, trace=False, log_name="server.log")
        self.client = self.srv.connect("tester")

    def restart(self, *, kill: bool = False) -> None:
        self.client.close()
        self.srv.stop(sig=9 if kill else 15)
        self.start()

    def close(self) -> None:
        self.client.close()
        self.srv.stop()

    def read(self, path: str) -> str:
        return self.client.read_file(path).decode()

    def write(self, path: str, text: str) -> None:
        self.client.write_file(path, text.encode())

    def ctl(self, path: str, text: str) -> str:
        return self.client.read_back(path, text.encode()).decode()

    def new(self, *options: str) -> str:
        return self.ctl("ctl", " ".join(["new", "sim", str(self.base), *options])).strip()

    def turn(self, name: str, prompt: str) -> str:
        self.write(f"{name}/in", prompt)
        return self.read(f"{name}/wait").strip()

    def usage(self, path: str) -> dict[str, str]:
        return figures(self.read(path))

    def until(self, predicate, what: str):
        deadline = time.monotonic() + DEADLINE
        while not (found := predicate()):
            assert time.monotonic() < deadline, f"no {what} within {DEADLINE} s"
            time.sleep(0.02)  # poll interval, bounded by the deadline
        return found


@pytest.fixture
def tree():
    base = Path(tempfile.mkdtemp(prefix="anvil-usage."))
    t = Tree(base)
    try:
        yield t
    finally:
        t.close()
        shutil.rmtree(base, ignore_errors=True)


def test_a_sessions_usage_is_the_sum_of_its_turns_and_survives_a_restart(tree):
    name = tree.new("name=dev")
    assert tree.usage("dev/usage") == {"turns": "0", "input_tokens": "0", "output_tokens": "0",
                                       "cache_read_tokens": "0", "cache_write_tokens": "0", "cost_usd": "0.000000",
                                       "unpriced_turns": "0", "budget_usd": "none", "token_budget": "none"}
    assert tree.turn(name, "one sim:usage=100,20,0.25").startswith("await")
    assert tree.turn(name, "two sim:usage=7,3") .startswith("await")  # no cost reported: unpriced
    expected = {"turns": "2", "input_tokens": "107", "output_tokens": "23", "cost_usd": "0.250000",
                "unpriced_turns": "1", "last_input_tokens": "7", "last_output_tokens": "3", "last_cost_usd": "unknown"}
    assert expected.items() <= tree.usage("dev/usage").items()
    tree.write("dev/ctl", "clear")  # a conversation's end is not the account's
    tree.restart(kill=True)
    assert expected.items() <= tree.usage("dev/usage").items()
    assert tree.turn(name, "three") .startswith("await")  # a turn that reports nothing counts, unpriced
    after = tree.usage("dev/usage")
    assert (after["turns"], after["input_tokens"], after["unpriced_turns"]) == ("3", "107", "2")


def test_agent_usage_has_a_line_per_session_the_removed_together_and_the_total(tree):
    for name, prompt in (("a", "sim:usage=10,1,0.5"), ("b", "sim:usage=20,2,0.25"), ("c", "sim:usage=40,4")):
        tree.new(f"name={name}")
        assert tree.turn(name, prompt).startswith("await")
    tree.write("c/ctl", "stop")
    tree.write("c/ctl", "remove")
    lines = {line.split(" ", 1)[0]: dict(w.split("=") for w in line.split()[1:])
             for line in tree.read("usage").splitlines()}
    assert set(lines) == {"a", "b", "(removed)", "(total)"}
    assert lines["a"]["input_tokens"] == "10" and lines["(removed)"]["input_tokens"] == "40"
    assert lines["(total)"]["turns"] == "3"
    assert (lines["(total)"]["input_tokens"], lines["(total)"]["cost_usd"]) == ("70", "0.750000")
    assert lines["(total)"]["unpriced_turns"] == "1"


def _bead(tree: Tree, title: str, convoy: str = "") -> str:
    return tree.ctl("beads/ctl", f"new '{title}' dev 'do {title}'" + (f" convoy={convoy}" if convoy else "")).strip()


def test_a_turn_counts_to_the_beads_held_and_to_their_convoy_once(tree):
    convoy = tree.ctl("convoys/ctl", "new 'ship it' 'everything shipped'").strip()
    first, second, other = _bead(tree, "one", convoy), _bead(tree, "two", convoy), _bead(tree, "three")
    tree.new("name=dev")
    tree.new("name=idle")
    tree.write(f"beads/{first}/ctl", "claim dev")
    tree.write(f"beads/{second}/ctl", "claim dev")
    assert tree.turn("dev", "both sim:usage=100,10,0.5").startswith("await")
    assert tree.turn("idle", "nothing held sim:usage=1,1,1").startswith("await")
    for bead in (first, second):
        assert tree.usage(f"beads/{bead}/usage")["input_tokens"] == "100"
    assert tree.usage(f"beads/{other}/usage")["turns"] == "0"
    convoy_usage = tree.usage(f"convoys/{convoy}/usage")
    assert (convoy_usage["turns"], convoy_usage["input_tokens"], convoy_usage["cost_usd"]) == ("1", "100", "0.500000")
    tree.restart(kill=True)
    assert tree.usage(f"convoys/{convoy}/usage")["input_tokens"] == "100"
    assert tree.usage(f"beads/{second}/usage")["cost_usd"] == "0.500000"


def test_a_spent_budget_keeps_the_prompt_and_raising_it_runs_it(tree):
    tree.new("name=dev", "budget=0.5")
    assert tree.turn("dev", "big sim:usage=10,10,0.75").startswith("await")  # it was within budget as it began
    assert tree.turn("dev", "next one") == "error"  # does not start: wait answers at once
    status = tree.read("dev/status")
    assert status.startswith("error simulated budget spent: session dev spent $0.7500 of its $0.5"), status
    assert "next one" in tree.read("dev/queue")
    assert "budget spent" in tree.read("errors")
    mail = [json.loads(tree.read(f"human/inbox/{stat.name}")) for stat in tree.client.list_dir("human/inbox")]
    spent = [m for m in mail if m["type"] == "BUDGET_SPENT"]
    assert len(spent) == 1 and spent[0]["from"] == "anvilfs" and "dev" in spent[0]["subject"], mail
    tree.write("dev/ctl", "budget 2")
    assert tree.read("dev/wait").startswith("await")
    assert "next one" in tree.read("dev/out")
    assert tree.usage("dev/usage")["budget_usd"] == "2"
    assert tree.read("dev/queue") == ""
    tree.restart(kill=True)  # an answered `budget` write is on disk
    assert tree.usage("dev/usage")["budget_usd"] == "2"


def test_a_convoys_token_budget_holds_every_session_at_work_on_its_beads(tree):
    convoy = tree.ctl("convoys/ctl", "new 'ship it' 'everything shipped'").strip()
    first, second = _bead(tree, "one", convoy), _bead(tree, "two", convoy)
    tree.write(f"convoys/{convoy}/ctl", "token_budget 100")
    for name, bead in (("a", first), ("b", second)):
        tree.new(f"name={name}")
        tree.write(f"beads/{bead}/ctl", f"claim {name}")
    assert tree.turn("a", "sim:usage=90,20").startswith("await")
    for name in ("b", "a"):
        assert tree.turn(name, "go") == "error"
        assert tree.read(f"{name}/status").startswith(f"error simulated budget spent: convoy {convoy}")
    tree.write(f"convoys/{convoy}/ctl", "token_budget 1000")
    for name in ("a", "b"):
        assert tree.read(f"{name}/wait").startswith("await")
    assert tree.usage(f"convoys/{convoy}/usage")["token_budget"] == "1000"
    tree.restart(kill=True)
    assert tree.usage(f"convoys/{convoy}/usage")["token_budget"] == "1000"


def test_budgets_refuse_bad_values_and_agents_raising_them(tree):
    tree.new("name=dev")
    for line, word in (("budget abc", "dollars"), ("budget -1", "dollars"), ("budget nan", "dollars"),
                       ("token_budget 1.5", "whole number"), ("token_budget ²", "whole number")):
        with pytest.raises(ServerError, match=word):
            tree.write("dev/ctl", line)
    with pytest.raises(ServerError, match="dollars"):
        tree.new("name=x", "budget=0")
    with tree.srv.connect("dev") as agent:
        with pytest.raises(ServerError, match="may not set budgets"):
            agent.write_file("dev/ctl", b"budget 100")
    assert tree.usage("dev/usage")["budget_usd"] == "none"



def test_a_bead_claimed_during_a_turn_counts_that_turn(tree):
    """A bot claims, works and completes in one turn: that turn is the bead's. An external session's owner
    plays the agent here (it begins its turn by writing status and ends it by writing out)."""
    bead = _bead(tree, "one")
    tree.ctl("ctl", f"new external {tree.base} name=ext")
    tree.write("ext/status", "running")
    tree.write(f"beads/{bead}/ctl", "claim ext")
    tree.write(f"beads/{bead}/ctl", "complete done")
    assert tree.usage(f"beads/{bead}/usage")["turns"] == "0"  # counted when the turn ends
    tree.write("ext/out", "the answer")
    assert tree.usage(f"beads/{bead}/usage")["turns"] == "1"
    assert tree.usage("ext/usage")["unpriced_turns"] == "1"  # an owner reports no usage
    tree.write("ext/status", "running")
    tree.write("ext/out", "a turn holding nothing")
    assert tree.usage(f"beads/{bead}/usage")["turns"] == "1"


def test_beads_usage_and_convoys_usage_have_a_line_for_each_that_a_turn_counted_to(tree):
    # one read for every bead (convoy), as agent/usage is for the sessions: what the web and top read
    convoy = tree.ctl("convoys/ctl", "new 'ship it' 'everything shipped'").strip()
    held, idle = _bead(tree, "one", convoy), _bead(tree, "two", convoy)
    assert (tree.read("beads/usage"), tree.read("convoys/usage")) == ("", "")
    tree.new("name=dev")
    tree.write(f"beads/{held}/ctl", "claim dev")
    assert tree.turn("dev", "sim:usage=100,10,0.5").startswith("await")
    assert tree.turn("dev", "sim:usage=1,1").startswith("await")
    for path, key in ((f"beads/{held}/usage", held), (f"convoys/{convoy}/usage", convoy)):
        [line] = tree.read(path.replace(f"/{key}/", "/")).splitlines()
        name, *words = line.split()
        each = tree.usage(path)
        assert name == key and dict(w.split("=") for w in words) == {k: each[k] for k in (
            "turns", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd",
            "unpriced_turns")}, (line, each)
    assert idle not in tree.read("beads/usage")
    # A turn's end is saved with the next commit, waited on by nobody (sessions/saving.py): `wait` may say
    # `await` a moment before its usage row is on disk. A write answered after it is committed after it (one
    # writer, in order), so the kill below finds both turns' rows; without it the kill could come first.
    _bead(tree, "three", convoy)
    tree.restart(kill=True)
    assert tree.read("convoys/usage").startswith(f"{convoy} turns=2 input_tokens=101 ")
