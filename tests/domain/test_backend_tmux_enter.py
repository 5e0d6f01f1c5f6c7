"""The tmux backend's Enter pressed again, with real tmux and tests/fakes/tui_agent.py (a TUI's input line).

A program whose input is not ready yet (Claude Code's, in its first
seconds) keeps a typed prompt and loses its Enter: the backend presses Enter
again if the hook's `running` has not come. It must never press one into
anything else: only on the program's first prompt, and only while that
prompt is still on the cursor's line. tui_agent.py stands in for the agent's
terminal UI (it draws what is typed, drops the Enters it is told to, asks
a permission-like question whose default an Enter chooses).

ENTER_AGAIN is the seconds before an Enter is pressed again. These tests set
it to NEVER until the program is where the test wants it (it dropped the
Enter, or asks its question), then to 0: from then on every look at the pane
would press Enter again if the backend allowed it, so what is proven does not
hang on timing.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from anvilfs.backends import tmux_enter
from anvilfs.backends.tmux import TmuxAgent, TmuxBackend
from anvilfs.backends.tmuxpane import last_line, still_typed
from anvilfs.config.model import TmuxBackendConfig
from harness.tmux import PaneLooks, private_tmux
from harness.tmux_agents import TMUX_SESSION, Enters, Recorder, hook_words, pane_text, session, take_words, tmux, until

pytestmark = pytest.mark.needs("tmux")

TUI = Path(__file__).parent.parent / "fakes" / "tui_agent.py"
NEVER = 1e9  # ENTER_AGAIN while the test gets the program where it wants it
LOOKS = 4 * tmux_enter.ENTERS  # looks at the pane, each of which would press Enter again (ENTER_AGAIN = 0)
GUARD = 30  # seconds a test's turns may take before it is called a hang


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    with private_tmux() as name:  # a tmux server of the test's own, killed after it
        yield name


def tui_backend(socket: str, tmp_path: Path, env: dict[str, str], *args: str) -> TmuxBackend:
    env = {**env, "TUI_AGENT_LOG": str(tmp_path / "enters")}
    config = TmuxBackendConfig(kind="tmux", argv=[sys.executable, str(TUI), *args], ready_seconds=0, env=env)
    return TmuxBackend("tui", config, tmux_session=TMUX_SESSION, tmux_socket=socket)


async def tui_started(socket: str, backend: TmuxBackend, tmp_path: Path) -> TmuxAgent:
    agent = backend.agent(session(tmp_path))
    await agent.start()
    await until(lambda: "tui>" in pane_text(socket, agent))  # it reads its terminal
    return agent


def enters_read(tmp_path: Path) -> list[str]:
    """What the program made of each Enter it read: dropped, empty, taken: LINE."""
    log = tmp_path / "enters"
    return log.read_text().splitlines() if log.exists() else []


def cursor_line(socket: str, agent: TmuxAgent) -> str:
    pane = agent.saved()["pane"]
    row = tmux(socket, "display-message", "-p", "-t", pane, "#{cursor_y}").strip()
    return tmux(socket, "capture-pane", "-p", "-t", pane, "-S", row, "-E", row).rstrip("\n")


def press_enter(socket: str, agent: TmuxAgent) -> None:
    """An Enter a person types (not through the backend's Tmux, so not counted by Enters)."""
    tmux(socket, "send-keys", "-t", agent.saved()["pane"], "Enter")


def test_the_prompt_is_still_typed_while_the_cursors_line_ends_with_its_last_line():
    assert last_line("first line\n  the   last\n\n") == "the last"
    assert still_typed("❯\xa0at once", last_line("at once"))  # Claude Code's input box
    assert still_typed("  the end of a long line", last_line("the start and " * 20 + "the end of a long line"))
    assert still_typed("line", "a long line")  # the program wrapped it: its last row is the end of it
    assert not still_typed("Allow the edit? [Y/n] ", last_line("please edit notes.txt"))
    assert not still_typed("", last_line("hello")) and not still_typed("❯ ", last_line("hello"))


async def test_a_first_prompt_whose_enter_was_dropped_gets_enter_again(tmux_socket, tmp_path, monkeypatch):
    monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", NEVER)
    async with hook_words() as (env, words):
        tui = tui_backend(tmux_socket, tmp_path, env, "--drop", "1")
        agent = await tui_started(tmux_socket, tui, tmp_path)
        enters, output = Enters(tui.tmux), Recorder()
        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.turn, "hello", output)
                await until(lambda: enters_read(tmp_path) == ["dropped"])
                monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", 0)
                await take_words(agent, words, "await")
    assert "answer to hello" in output.text()
    read = enters_read(tmp_path)
    # the Enter that got through may have had one more behind it before the program left its input line: empty
    assert read[:2] == ["dropped", "taken: hello"] and set(read[2:]) <= {"empty"}, read
    assert 2 <= enters.count <= tmux_enter.ENTERS


async def test_no_enter_answers_a_question_of_a_program_whose_hooks_never_say_running(tmux_socket, tmp_path,
                                                                                     monkeypatch):
    """The program's first prompt, taken: its hooks report only the turn's end, and it asks a permission-like
    question whose default (yes) an Enter would choose. No Enter goes to it after the prompt's own."""
    monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", NEVER)
    async with hook_words() as (env, words):
        tui = tui_backend(tmux_socket, tmp_path, env, "--no-running")
        agent = await tui_started(tmux_socket, tui, tmp_path)
        enters, looks, output = Enters(tui.tmux), PaneLooks(tui.tmux), Recorder()
        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.turn, "please edit notes.txt", output)
                await until(lambda: "Allow the edit? [Y/n]" in cursor_line(tmux_socket, agent))
                monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", 0)
                await looks.wait_more(LOOKS)
                assert enters.count == 1 and enters_read(tmp_path) == ["taken: please edit notes.txt"]
                tmux(tmux_socket, "send-keys", "-t", agent.saved()["pane"], "n", "Enter")  # a person answers it
                await take_words(agent, words, "await")
    assert "the edit was refused" in output.text() and "allowed" not in output.text()
    assert enters.count == 1


@pytest.mark.parametrize("when", ["a-later-turn", "an-adopted-program"])
async def test_an_enter_dropped_after_the_programs_first_prompt_is_not_pressed_again(tmux_socket, tmp_path,
                                                                                    monkeypatch, when):
    """Only a program's first prompt may find its input not ready: on a later turn, or in a program this
    server did not start, the backend presses no Enter again even where the prompt still waits."""
    monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", NEVER)
    async with hook_words() as (env, words):
        tui = tui_backend(tmux_socket, tmp_path, env, "--drop", "2" if when == "a-later-turn" else "1")
        agent = await tui_started(tmux_socket, tui, tmp_path)
        if when == "a-later-turn":
            with trio.fail_after(GUARD):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(take_words, agent, words, "await")
                    await agent.turn("hello", Recorder(1))
        else:  # as a restarted server finds it
            agent = await TmuxBackend("tui", tui.config, tmux_session=TMUX_SESSION,
                                      tmux_socket=tmux_socket).adopt(session(tmp_path), agent.saved())
        enters, looks, output = Enters(agent.tmux), PaneLooks(agent.tmux), Recorder(2)
        monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", 0)
        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.turn, "and now this", output)
                await until(lambda: enters_read(tmp_path)[-1:] == ["dropped"])
                await looks.wait_more(LOOKS)
                assert enters.count == 1 and cursor_line(tmux_socket, agent).endswith("tui> and now this")
                press_enter(tmux_socket, agent)  # a person sees it waiting
                await take_words(agent, words, "await")
    assert "answer to and now this" in output.text()


async def test_no_enter_is_pressed_again_once_the_hook_said_running(tmux_socket, tmp_path, monkeypatch):
    """The program keeps the prompt on its line while it works (--hold): `running` alone tells it was taken."""
    monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", NEVER)
    gate = tmp_path / "gate"
    async with hook_words() as (env, words):
        tui = tui_backend(tmux_socket, tmp_path, env, "--hold", str(gate))
        agent = await tui_started(tmux_socket, tui, tmp_path)
        enters, looks, output = Enters(tui.tmux), PaneLooks(tui.tmux), Recorder()
        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(agent.turn, "hello", output)
                await take_words(agent, words, "running")
                monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", 0)
                await looks.wait_more(LOOKS)
                assert cursor_line(tmux_socket, agent).endswith("tui> hello")  # an Enter would still find it
                gate.touch()
                await take_words(agent, words, "await")
    assert enters.count == 1 and "answer to hello" in output.text()


async def test_enters_the_hook_never_answers_stop_at_enters_in_all(tmux_socket, tmp_path, monkeypatch):
    monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", NEVER)
    tui = tui_backend(tmux_socket, tmp_path, {}, "--drop", "all")  # and no hook: nothing ever says running
    agent = await tui_started(tmux_socket, tui, tmp_path)
    enters, looks = Enters(tui.tmux), PaneLooks(tui.tmux)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.turn, "hello", Recorder())
            await until(lambda: enters_read(tmp_path) == ["dropped"])
            monkeypatch.setattr(tmux_enter, "ENTER_AGAIN", 0)
            await looks.wait_more(LOOKS)
            scope.cancel()
    assert enters.count == tmux_enter.ENTERS
    await until(lambda: enters_read(tmp_path) == ["dropped"] * tmux_enter.ENTERS)  # each reached the program
