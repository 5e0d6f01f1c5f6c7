"""One conformance suite that every backend kind passes (SPEC §5).

Each kind runs a real agent: `sim`; the fake agent CLI as a per-turn
`command`; the same fake inside real tmux (a private tmux server),
reporting turns through the shipped hook script, which writes `status`
over a real 9P connection to the server under test; and an
OpenAI-compatible streaming server on loopback. The suite drives sessions
through the session manager and waits on their change signals, never on
sleeps.

"Crash" means the agent's process dies (the fake kills itself, the tmux
pane's program exits): the session goes `exited` and is restarted with
backoff. An HTTP endpoint has no process of ours to crash; its hard
failure (HTTP 500) leaves the session in `error`, still usable.

An `external` session's agent is its owner: here a scripted owner task
that takes each prompt from the session's `next` cursor and answers it
through the owner's calls, as a conductor does through the files. It
gives its answers whole, so an interrupted turn has said nothing, and
there is no process to crash (the crash check does not apply: an owner
that dies leaves the session as it was, see test_external.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from anvilfs.app import App
from anvilfs.backends import CommandBackend, ExternalBackend, OpenAIBackend, SimBackend, TmuxBackend
from anvilfs.config import CommandBackendConfig, OpenAIBackendConfig, TmuxBackendConfig
from anvilfs.fs.cursors import JournalCursor, NextCursor, WaitCursor
from anvilfs.server import Server, ServerOptions
from anvilfs.sessions import Backend, RestartPolicy, Session, State
from harness.fakes import FAKE_AGENT, fake_openai_server
from harness.processes import wait_gone
from harness.tmux import private_tmux

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "anvilfs-status"
BIN = Path(sys.executable).parent  # where the `anvilfs` command the hook runs lives

GUARD = 60  # seconds: a broken backend fails the test instead of hanging it


@dataclass(frozen=True)
class Kind:
    """How the suite drives one backend kind."""

    name: str
    backends: Callable[[Path], contextlib.AbstractContextManager[Backend]]  # given a scratch dir
    mark: str  # text in every answer
    hang: str  # a prompt whose turn never ends by itself
    crash: str | None  # a prompt whose turn kills the agent (None: no process to kill)
    crash_state: State  # where a crash leaves the session before any restart
    partial: bool = True  # an interrupted turn keeps what it had said
    owner: Callable | None = None  # async (app, task_status): the agent of an owner-driven kind, for the test's life


@contextlib.contextmanager
def sim_backend(tmp: Path) -> Iterator[Backend]:
    yield SimBackend("agent")


@contextlib.contextmanager
def command_backend(tmp: Path) -> Iterator[Backend]:
    yield CommandBackend("agent", CommandBackendConfig(
        kind="command",
        argv=[sys.executable, str(FAKE_AGENT), "-p", "--session-id", "{conversation}"],
        resume_argv=[sys.executable, str(FAKE_AGENT), "-p", "--resume", "{conversation}"],
        env={"FAKE_AGENT_STATE": str(tmp / "fake-state")},
    ))


@contextlib.contextmanager
def openai_backend(tmp: Path) -> Iterator[Backend]:
    with fake_openai_server(tmp) as server:
        yield OpenAIBackend("agent", OpenAIBackendConfig(kind="openai", url=server.url, model="fake-model"))


@contextlib.contextmanager
def tmux_backend(tmp: Path) -> Iterator[Backend]:
    with private_tmux() as socket:
        yield TmuxBackend("agent", TmuxBackendConfig(
            kind="tmux", argv=[sys.executable, str(FAKE_AGENT), "--interactive"], turn_end="hook", ready_seconds=0.3,
            env={"ANVILFS_HOOK": str(HOOK), "PATH": f"{BIN}:{os.environ['PATH']}", "FAKE_AGENT_STATE": str(tmp / "fake-state")},
        ), tmux_session="anvilfs-conformance", tmux_socket=socket)


@contextlib.contextmanager
def external_backend(tmp: Path) -> Iterator[Backend]:
    yield ExternalBackend("agent")


async def scripted_owner(app: App, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """The owner of every session the test makes: one task per session, started when `events` shows it new."""
    news = JournalCursor(app.events)
    task_status.started()
    async with trio.open_nursery() as nursery:
        while True:
            await news.wait_ready(0)
            for line in news.read(0, 1 << 20).decode().splitlines():
                _, name, what, *_ = line.split() + ["", ""]
                if what == "new":
                    nursery.start_soon(_own, app, app.sessions.get(name))


async def _own(app: App, session: Session) -> None:
    """Take each prompt from `next` and answer it; a prompt with owner:hang is taken and never answered."""
    owners = app.sessions.owners
    while True:
        cursor = NextCursor(owners, session)
        await cursor.wait_ready(0)
        prompt = cursor.read(0, 1 << 20).decode()
        if not prompt:
            return  # the session ended
        turn = session.turn
        if "owner:hang" in prompt:
            await settle(session, lambda: session.turn is not turn or session.state is not State.RUNNING)
            continue
        first = prompt.strip().splitlines()[0]
        owners.answer(session.name, f"[external owner] {session.name}, turn {turn.number}: you wrote {first}\n")


KINDS = [
    Kind("sim", sim_backend, "[simulated]", "sim:hang", "sim:exit", State.EXITED),
    Kind("command", command_backend, "[fake agent]", "fake:hang", "fake:crash", State.EXITED),
    Kind("tmux", tmux_backend, "[fake agent]", "fake:hang", "fake:crash", State.EXITED),
    Kind("openai", openai_backend, "[fake openai]", "fake:hang", "fake:fail", State.ERROR),
    Kind("external", external_backend, "[external owner]", "owner:hang", None, State.AWAIT, partial=False,
         owner=scripted_owner),
]


# what a kind needs is checked before the (trio) fixture runs: a skip raised inside trio loses its reason
NEEDS = {"tmux": pytest.mark.needs("tmux")}


def kinds(kinds: list[Kind]) -> list:
    return [pytest.param(k, id=k.name, marks=NEEDS.get(k.name, ())) for k in kinds]


@pytest.fixture(params=kinds(KINDS))
async def world(request, tmp_path):
    """A running App whose only backend is `agent` of the kind under test."""
    kind: Kind = request.param
    scratch = Path(tempfile.mkdtemp(prefix="anvc.", dir="/tmp"))  # short: a socket path has 108 bytes
    options = ServerOptions(namespace=str(scratch / "ns"), state_dir=str(scratch / "state"))
    address = f"unix!{options.socket_path}"
    with kind.backends(scratch) as backend:
        app = App(backends={"agent": backend}, restart=RestartPolicy(first_delay=0.05, max_delay=0.2, max_restarts=3),
                  state_dir=options.state_dir, agent_env=lambda name: {"ANVILFS_SESSION": name, "ANVILFS_ADDRESS": address})
        async with trio.open_nursery() as nursery:
            await nursery.start(Server(app, options).run)  # the hook of tmux agents writes status over 9P
            if kind.owner is not None:
                await nursery.start(kind.owner, app)
            yield kind, app
            for session in app.sessions.all():
                if session.state not in (State.STOPPED, State.EXITED):
                    app.sessions.stop(session.name, kill=True)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    shutil.rmtree(scratch, ignore_errors=True)


async def settle(session: Session, predicate: Callable[[], bool]) -> None:
    """Wait for the session's state to satisfy predicate (woken by its changes)."""
    with trio.fail_after(GUARD):
        while not predicate():
            await session.changes.wait_changed(session.changes.version)


async def hanging(app: App, session: Session, kind: Kind) -> None:
    """Submit a prompt that hangs, and return once its turn has answered something.

    Only then is the agent surely past its start (a CLI has read its prompt
    and recorded the conversation).
    """
    app.sessions.submit(session.name, kind.hang, "tester")
    await settle(session, lambda: session.state is State.RUNNING)
    turn = session.turn
    if not kind.partial:
        return  # its answer comes whole or not at all: running is as far as it gets
    with trio.fail_after(GUARD):
        while kind.mark not in turn.text():
            await turn.changes.wait_changed(turn.changes.version)


async def answered(app: App, session: Session, prompt: str) -> str:
    turns = session.turn_count
    app.sessions.submit(session.name, prompt, "tester")
    await settle(session, lambda: session.turn_count > turns and not session.busy)
    return session.out


async def test_start_reaches_idle(world):
    kind, app = world
    s = app.sessions.new("agent", "/tmp", name="c1")
    await settle(s, lambda: s.state is not State.STARTING)
    assert s.state is State.IDLE, s.status_line()


async def test_two_turns_put_their_answers_in_out(world):
    kind, app = world
    s = app.sessions.new("agent", "/tmp", name="c1")
    first = await answered(app, s, "first question")
    assert s.state is State.AWAIT, s.status_line()
    assert kind.mark in first
    second = await answered(app, s, "second question")
    assert kind.mark in second and second != first
    log = s.log_text()
    assert log.index("first question") < log.index("second question")


async def test_wait_blocks_until_the_turn_ends(world):
    kind, app = world
    s = app.sessions.new("agent", "/tmp", name="c1")
    app.sessions.submit("c1", "hello", "tester")
    cursor = WaitCursor(s)
    assert not cursor.ready(0)  # a queued prompt makes the session busy at once
    with trio.fail_after(GUARD):
        await cursor.wait_ready(0)
    assert cursor.read(0, 100) == b"await\n"
    assert kind.mark in s.out


async def test_interrupt_ends_a_hanging_turn(world):
    kind, app = world
    s = app.sessions.new("agent", "/tmp", name="c1")
    await hanging(app, s, kind)
    app.sessions.interrupt("c1")
    await settle(s, lambda: s.state is not State.RUNNING)
    assert s.state is State.AWAIT and s.detail == "interrupted"
    assert (kind.mark in s.out) is kind.partial  # what the turn said before it was interrupted, if it says any
    assert kind.mark in await answered(app, s, "still there?"), s.status_line() + s.log_text()


# an external session has no process anvilfs runs, so nothing to crash: the check is for the other kinds
@pytest.mark.parametrize("world", kinds([k for k in KINDS if k.crash is not None]), indirect=True)
async def test_crash_then_recovery(world):
    kind, app = world
    s = app.sessions.new("agent", "/tmp", name="c1")
    await answered(app, s, "before")
    app.sessions.submit("c1", kind.crash, "tester")
    app.sessions.submit("c1", "after the crash", "tester")  # must not be lost
    await settle(s, lambda: not s.busy)
    assert s.state is State.AWAIT, s.status_line()
    # the crash state may last no time at all (the queued prompt runs at once): the events show it
    assert f"c1 {kind.crash_state.value}" in app.events.text()
    assert "after the crash" in s.log_text() and kind.mark in s.out
    if kind.crash_state is State.EXITED:
        assert "c1 restarting in" in app.events.text()


async def test_stop_ends_the_agent(world):
    kind, app = world
    s = app.sessions.new("agent", "/tmp", name="c1")
    await hanging(app, s, kind)
    pid = s.agent.pid
    app.sessions.stop("c1")
    assert s.state is State.STOPPED and not s.busy
    await trio.testing.wait_all_tasks_blocked()
    if pid is not None:  # the agent's process is gone
        await wait_gone(pid, "(the stopped agent)")
