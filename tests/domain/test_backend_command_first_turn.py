"""A command backend's first turn that failed or was cut short: what the next turn does with its conversation.

restart_after_failed_first_turn = true (the default, gemini's): the next turn
begins a new conversation. false (claude's, codex's): the next resumes it,
and if the CLI had saved nothing (cut short as it started) and says so
(missing_conversation_pattern), the turn raises NothingToResume and the one
after begins the conversation (the runner runs the prompt again at once, as
run_as_the_runner does; the role that goes with it: test_backend_command_role.py).

tests/fakes/fake_agent.py keeps conversations as claude does (a run is
counted as it starts, --resume refuses an id never started), so its answer's
"conversation ID turn N" tells which conversation each turn went to.
"""

from __future__ import annotations

import sys

import pytest
import trio
from pydantic import ValidationError

from anvilfs.backends.command import CommandBackend
from anvilfs.config.model import CommandBackendConfig
from anvilfs.sessions.backend import NothingToResume, TurnFailed
from test_backend_command import Collector, info, make_agent, run

KEEPS = {"restart_after_failed_first_turn": False}  # a CLI that keeps a failed first turn
SAYS_NOTHING_SAVED = r"no conversation found with session id"  # the fake's words, as claude's


async def fail(agent, prompt: str) -> None:
    with pytest.raises(TurnFailed):
        await run(agent, prompt)


async def cut_short(agent, how: str) -> None:
    """The first turn ends before its answer: the CLI fails, is interrupted (cancelled), or times out."""
    if how == "failed":
        return await fail(agent, "fake:fail")
    if how == "timed out":
        return await fail(agent, "fake:hang")  # the agent's config has a timeout
    with trio.CancelScope() as scope:
        await run(agent, "fake:hang", Collector(agent, when="hanging", then=scope.cancel))
    assert scope.cancelled_caught


HOW = ["failed", "interrupted", "timed out"]


async def run_as_the_runner(agent, prompt: str) -> Collector:
    """A turn as the session's runner drives it: once more, beginning the conversation, if nothing was saved."""
    try:
        return await run(agent, prompt)
    except NothingToResume:
        assert agent.begins_conversation
        return await run(agent, prompt)


@pytest.mark.parametrize("how", HOW)
async def test_by_default_the_turn_after_begins_a_new_conversation(tmp_path, how):
    # Gemini CLI drops a failed first prompt: its id can then be neither resumed nor started again
    agent = make_agent(tmp_path, timeout=3)
    await cut_short(agent, how)
    fresh = agent.saved()["conversation"]
    assert fresh != "c-1" and agent.saved() == {"turns": 0, "conversation": fresh}
    assert agent.begins_conversation  # the session's role goes with it
    assert f"conversation {fresh} turn 1:" in (await run(agent, "again")).text
    await fail(agent, "fake:fail")  # a later turn that fails keeps its conversation
    assert f"conversation {fresh} turn 3:" in (await run(agent, "more")).text


@pytest.mark.parametrize("how", ["failed", "interrupted"])  # interrupted once the fake said it hangs
async def test_a_cli_that_keeps_the_turn_has_it_resumed(tmp_path, how):
    agent = make_agent(tmp_path, **KEEPS)
    await cut_short(agent, how)
    assert agent.saved() == {"turns": 1, "conversation": "c-1", "unsure": True}
    assert not agent.begins_conversation  # the conversation kept the role the cut turn carried
    assert "conversation c-1 turn 2:" in (await run(agent, "again")).text  # the fake counted the cut turn
    assert agent.saved() == {"turns": 2, "conversation": "c-1"}


async def test_a_first_turn_that_timed_out_is_resumed_or_begun_again_in_its_conversation(tmp_path):
    # the fake may not have started in 3 s on a loaded machine: then it saved nothing, and says so on resume
    agent = make_agent(tmp_path, timeout=3, missing_conversation_pattern=SAYS_NOTHING_SAVED, **KEEPS)
    await cut_short(agent, "timed out")
    assert agent.saved() == {"turns": 1, "conversation": "c-1", "unsure": True}
    assert "conversation c-1 turn " in (await run_as_the_runner(agent, "again")).text


async def test_a_resume_that_finds_nothing_saved_has_the_next_run_begin_the_conversation(tmp_path):
    agent = make_agent(tmp_path, missing_conversation_pattern=SAYS_NOTHING_SAVED, **KEEPS)
    await cut_short(agent, "interrupted")
    (tmp_path / "state" / "c-1.turns").unlink()  # as claude cut short in its first second: nothing saved
    again = make_agent(tmp_path, agent.saved(), missing_conversation_pattern=SAYS_NOTHING_SAVED, **KEEPS)  # a restart
    noted = Collector(again)
    with pytest.raises(NothingToResume, match="has no conversation c-1 to resume"):
        await run(again, "hello", noted)
    assert any("has no conversation c-1 to resume" in note and "runs again with argv" in note for note in noted.notes)
    assert again.begins_conversation and again.saved() == {"turns": 0, "conversation": "c-1"}
    out = await run(again, "hello")  # as the runner runs it again
    assert "conversation c-1 turn 1: " in out.text and "the first line was: hello" in out.text
    assert again.saved() == {"turns": 1, "conversation": "c-1"}
    assert "conversation c-1 turn 2:" in (await run(again, "more")).text


async def test_without_the_pattern_a_resume_that_finds_nothing_saved_fails_saying_so(tmp_path):
    agent = make_agent(tmp_path, **KEEPS)
    await cut_short(agent, "interrupted")
    (tmp_path / "state" / "c-1.turns").unlink()
    with pytest.raises(TurnFailed, match="no conversation found with session id c-1"):
        await run(agent, "hello")


async def test_the_pattern_is_looked_for_only_in_the_resume_after_a_failed_first_turn(tmp_path):
    agent = make_agent(tmp_path, missing_conversation_pattern=SAYS_NOTHING_SAVED, **KEEPS)
    await run(agent, "one")
    (tmp_path / "state" / "c-1.turns").unlink()  # lost later (a CLI's cleanup): not begun again unasked
    with pytest.raises(TurnFailed, match="no conversation found"):
        await run(agent, "two")


# ------------------------------------------------------------ CLIs that name their conversations (codex)

NAMES_ITS_OWN = """\
import sys
args = sys.argv[1:]
if args[:1] == ["--resume"]:
    print("resumed", args[1])
    sys.exit(0)
prompt = sys.stdin.read()
if "early" in prompt:
    sys.exit(5)  # cut short before it named the conversation
print("session id: conv-" + prompt.split()[0], file=sys.stderr, flush=True)
if "fail" in prompt:
    sys.exit(4)
print("started")
"""


def names_its_own(**changes) -> CommandBackendConfig:
    fields = {"kind": "command", "argv": [sys.executable, "-c", NAMES_ITS_OWN],
              "resume_argv": [sys.executable, "-c", NAMES_ITS_OWN, "--resume", "{conversation}"],
              "conversation_pattern": r"session id: (\S+)", **KEEPS}
    return CommandBackendConfig(**(fields | changes))


async def test_the_id_a_failed_first_turn_printed_is_the_one_resumed(tmp_path):
    agent = CommandBackend("own", names_its_own()).agent(info(tmp_path))
    await fail(agent, "alpha fail")
    assert (await run(agent, "beta")).text == "resumed conv-alpha\n"
    early = CommandBackend("own", names_its_own()).agent(info(tmp_path))
    await fail(early, "early")  # no id printed
    assert early.saved()["turns"] == 0  # nothing to resume: the next turn begins one
    assert (await run(early, "gamma")).text == "started\n"


def test_keeping_a_failed_first_turn_needs_the_id_in_its_own_stderr():
    with pytest.raises(ValidationError, match="needs the id in the failed turn's own stderr"):
        names_its_own(conversation_argv=["llm", "logs", "list"])
