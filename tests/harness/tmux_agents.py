"""The tmux backend's tests' common parts: a fake agent in tmux, its hook's words, what a turn wrote.

    agent = await started(socket, backend(socket, turn_end="hook").agent(session(tmp_path)))
    async with hook_words() as (env, words):     # the fake's hook (ANVILFS_HOOK) speaks to the test
        word, let_go = await words.receive()     # the test hands it to agent.hook(word), then lets it go

The fake agent is tests/fakes/fake_agent.py --interactive. Every test runs
its own tmux server (its ``tmux_socket`` fixture: harness/tmux.py's
private_tmux), so a person's tmux is never touched. The fake's hook is a
tiny client of a unix socket the test serves: each word arrives on a trio
channel and the hook (and so the fake) waits until the test lets it go, as
`anvilfs hook` returns only once the server has taken the word.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from anvilfs.backends.tmux import TmuxAgent, TmuxBackend
from anvilfs.config.model import TmuxBackendConfig
from anvilfs.sessions.backend import SessionInfo

FAKE = Path(__file__).parent.parent / "fakes" / "fake_agent.py"
HOOKS = Path(__file__).parents[2] / "hooks"
MARKER = "fake> "
TMUX_SESSION = "anvilfs-test"
HOOK_CLIENT = """\
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\\n")
s.recv(1)
"""


def backend(tmux_socket: str, **settings) -> TmuxBackend:
    config = TmuxBackendConfig(kind="tmux", argv=[sys.executable, str(FAKE), "--interactive"], ready_seconds=0,
                               **settings)
    return TmuxBackend("fake-tmux", config, tmux_session=TMUX_SESSION, tmux_socket=tmux_socket)


def session(tmp_path: Path, name: str = "bot1") -> SessionInfo:
    return SessionInfo(name=name, cwd=str(tmp_path), env={"ANVILFS_SESSION": name})


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True).stdout


async def until(predicate, timeout: float = 10.0) -> None:
    """Poll external state (tmux, processes) until predicate() holds."""
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.05)


def pane_text(socket: str, agent: TmuxAgent) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", agent.saved()["pane"])


async def started(socket: str, agent: TmuxAgent) -> TmuxAgent:
    await agent.start()
    await until(lambda: MARKER.strip() in pane_text(socket, agent))  # the fake is reading its terminal
    return agent


class Recorder:
    """An Output that can be waited on; ``number`` is the session's turn number it stands for."""

    def __init__(self, number: int = 1) -> None:
        self.number = number
        self.chunks: list[str] = []
        self.given: str | None = None  # the answer handed in whole (Output.answer), if one was
        self._changed = trio.Event()

    def write(self, text: str) -> None:
        self.chunks.append(text)
        self._changed.set()
        self._changed = trio.Event()

    def note(self, text: str) -> None:
        pass

    def answer(self, text: str) -> None:
        self.given = text

    def text(self) -> str:
        return "".join(self.chunks)

    async def wait_for(self, text: str) -> None:
        with trio.fail_after(10):
            while text not in self.text():
                await self._changed.wait()


@asynccontextmanager
async def hook_words():
    """(the env that makes the fake agent report its hooks, a channel of (word, let_go) pairs)."""
    directory = tempfile.mkdtemp(prefix="anvt")  # short: unix socket paths are limited
    path = os.path.join(directory, "hook.sock")
    client = os.path.join(directory, "hook.py")
    Path(client).write_text(HOOK_CLIENT)
    send, receive = trio.open_memory_channel(0)

    async def handle(stream) -> None:
        async with stream:
            data = b""
            while not data.endswith(b"\n"):
                data += await stream.receive_some()
            let_go = trio.Event()
            await send.send((data.decode().strip(), let_go))
            await let_go.wait()
            await stream.send_all(b"k")

    sock = trio.socket.socket(trio.socket.AF_UNIX)
    try:
        await sock.bind(path)
        sock.listen()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, handle, [trio.SocketListener(sock)])
            yield {"ANVILFS_HOOK": shlex.join([sys.executable, client, path])}, receive
            nursery.cancel_scope.cancel()
    finally:
        sock.close()
        shutil.rmtree(directory, ignore_errors=True)


async def cut_off(agent: TmuxAgent, socket: str, prompt: str, number: int, gate: Path) -> None:
    """Type a prompt whose answer waits at the gate, then cancel the turn as a stopping server does; open the gate."""
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent.turn, prompt, Recorder(number))
            await until(lambda: "this answer comes from" not in pane_text(socket, agent).split(prompt)[-1]
                        and "[fake agent] conversation" in pane_text(socket, agent).split(prompt)[-1])
            scope.cancel()
    gate.touch()  # the rest of the answer comes while no server is there
    await until(lambda: f"the first line was: {prompt}\n" in pane_text(socket, agent)
                and pane_text(socket, agent).rstrip().endswith(MARKER.strip()))  # and the fake reads again


class Enters:
    """Counts the Enters a backend's tmux sends (send-keys ... Enter), wrapping Tmux.run in place."""

    def __init__(self, tmux) -> None:
        self.count = 0
        run = tmux.run

        async def counted(*args: str, **kwargs):
            if args[:1] == ("send-keys",) and args[-1] == "Enter":
                self.count += 1
            return await run(*args, **kwargs)

        tmux.run = counted


async def take_words(agent: TmuxAgent, words, until_word: str) -> None:
    """Hand the hook's words to the agent (as the server does) up to and with until_word."""
    while True:
        word, let_go = await words.receive()
        agent.hook(word)
        let_go.set()
        if word == until_word:
            return
