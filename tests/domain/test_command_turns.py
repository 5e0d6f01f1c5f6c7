"""The per-turn command backend across turns and sessions: CLIs that name their own conversations
(llm, codex), and which of a backend's turns may run together.

Split from test_backend_command.py, whose helpers (the fake agent, run, Collector) these use.
"""

from __future__ import annotations

import sys

import pytest
import trio
import trio.testing

from anvilfs.backends.command import CommandBackend
from anvilfs.backends.conversation import TurnGate
from anvilfs.config.model import CommandBackendConfig
from test_backend_command import GUARD, Collector, claude_like, info, run


# ------------------------------------------------------------ CLIs that name their conversations (llm, codex)

NAMES_ITS_OWN = """\
import sys
args = sys.argv[1:]
if args[:1] == ["--resume"]:
    print("resumed", args[1])
else:
    print("session id: conv-" + sys.stdin.read().split()[0], file=sys.stderr)
    print("started")
"""


def names_its_own(tmp_path, **changes) -> CommandBackendConfig:
    fields = {"kind": "command", "argv": [sys.executable, "-c", NAMES_ITS_OWN],
              "resume_argv": [sys.executable, "-c", NAMES_ITS_OWN, "--resume", "{conversation}"],
              "conversation_pattern": r"session id: (\S+)"}
    return CommandBackendConfig(**(fields | changes))


async def test_the_id_a_cli_prints_on_stderr_is_the_conversation_resumed(tmp_path):
    agent = CommandBackend("own", names_its_own(tmp_path)).agent(info(tmp_path))
    assert "started" in (await run(agent, "alpha\n")).text
    assert (await run(agent, "beta\n")).text == "resumed conv-alpha\n"
    assert agent.saved()["conversation"] == "conv-alpha"  # a restarted server resumes it too
    agent.clear()
    await run(agent, "gamma\n")
    assert (await run(agent, "delta\n")).text == "resumed conv-gamma\n"


async def test_the_id_can_come_from_a_command_run_after_the_turn(tmp_path):
    lookup = [sys.executable, "-c", "import os; print('conversation_id=' + os.getcwd() + '-x')"]  # run in the cwd
    config = names_its_own(tmp_path, conversation_argv=lookup, conversation_pattern=r"conversation_id=(\S+)")
    agent = CommandBackend("own", config).agent(info(tmp_path))
    await run(agent, "alpha\n")
    assert (await run(agent, "beta\n")).text == f"resumed {tmp_path}-x\n"


async def test_an_id_not_found_is_noted_and_the_next_turn_begins_again(tmp_path):
    agent = CommandBackend("own", names_its_own(tmp_path, conversation_pattern=r"no such (\S+)")).agent(info(tmp_path))
    first = await run(agent, "alpha\n")
    assert any("has no match for conversation_pattern" in note and "begins a new conversation" in note
               for note in first.notes), first.notes
    assert "started" in (await run(agent, "beta\n")).text  # argv again, not a resume of an unknown id


def test_conversation_settings_are_checked_at_load():
    with pytest.raises(ValueError, match="at most one group"):
        CommandBackendConfig(kind="command", argv=["x"], conversation_pattern="(a)(b)")
    with pytest.raises(ValueError, match="not a regular expression"):
        CommandBackendConfig(kind="command", argv=["x"], conversation_pattern="(")
    with pytest.raises(ValueError, match="at most one group"):
        CommandBackendConfig(kind="command", argv=["x"], error_pattern="(a)(b)")
    with pytest.raises(ValueError, match="at most one group"):
        CommandBackendConfig(kind="command", argv=["x"], reason_pattern="(a)(b)")
    with pytest.raises(ValueError, match="needs conversation_pattern"):
        CommandBackendConfig(kind="command", argv=["x"], conversation_argv=["y"])


def test_budget_argv_takes_the_dollars_left_and_nothing_else():
    with pytest.raises(ValueError, match=r"lacks \{budget_usd\}: budget_argv takes the dollars left"):
        CommandBackendConfig(kind="command", argv=["x"], budget_argv=["--max-budget-usd"])
    with pytest.raises(ValueError, match=r'has \{prompt\}: .* e\.g\. \["--max-budget-usd", "\{budget_usd\}"\]'):
        CommandBackendConfig(kind="command", argv=["x"], budget_argv=["--cap={budget_usd}", "{prompt}"])


class _Budgeted(Collector):
    def __init__(self, left):
        super().__init__()
        self.budget_usd_left = left


@pytest.mark.parametrize(("left", "words"), [(0.25, "--cap 0.25"), (1e-07, "--cap 1e-07"), (None, "")])
async def test_the_dollars_a_turn_has_left_go_on_its_command_line(tmp_path, left, words):
    """budget_argv's words go after the command's own when the session's budgets leave it money, never without."""
    config = CommandBackendConfig(kind="command", argv=[sys.executable, "-c", "import sys; print(*sys.argv[1:])"],
                                  budget_argv=["--cap", "{budget_usd}"])
    out = await run(CommandBackend("budgeted", config).agent(info(tmp_path)), "hello", _Budgeted(left))
    assert out.text == words + "\n"


async def test_a_turn_that_looks_its_id_up_runs_alone():
    gate = TurnGate()
    order: list[str] = []

    async def turn(name: str, alone: bool, release: trio.Event) -> None:
        async with gate.alone() if alone else gate.together():
            order.append(name)
            await release.wait()

    first, looker, later = trio.Event(), trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(turn, "first", False, first)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(turn, "looker", True, looker)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(turn, "later", False, later)
        await trio.testing.wait_all_tasks_blocked()
        assert order == ["first"]  # the looker waits for the running turn; the later one for the looker
        first.set()
        await trio.testing.wait_all_tasks_blocked()
        assert order == ["first", "looker"]
        looker.set()
        later.set()
    assert order == ["first", "looker", "later"]


async def test_one_at_a_time_keeps_a_second_sessions_turn_waiting_until_the_first_ends(tmp_path):
    """For a CLI whose own state breaks when two runs overlap (llm's logs.db): config one_at_a_time."""
    gate_file = tmp_path / "gate"
    config = claude_like(tmp_path, one_at_a_time=True,
                         env={"FAKE_AGENT_STATE": str(tmp_path / "state"), "FAKE_AGENT_GATE": str(gate_file)})
    backend = CommandBackend("fake", config)
    agents = [backend.agent(info(tmp_path, name=n, conversation=f"c-{n}")) for n in ("a", "b")]
    started = trio.Event()
    outs = [Collector(agent, when="[fake", then=started.set) for agent in agents]
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            for agent, out in zip(agents, outs):
                nursery.start_soon(agent.turn, "fake:slow", out)
            await started.wait()  # one has printed its first piece and waits at the gate file
            await trio.testing.wait_all_tasks_blocked()
            running = [agent.pid is not None for agent in agents]
            assert running.count(True) == 1, f"both turns' processes ran at once: {running}"
            gate_file.touch()
    assert all("[fake" in out.text for out in outs), [out.text for out in outs]
