"""AsyncClient against a real `anvilfs serve`: many blocked requests on one connection, and flush on cancel."""

from __future__ import annotations

import re
import socket

import pytest
import trio

from anvilfs import aioclient, client
from anvilfs.aioclient import AddressError, AsyncClient, ServerError
from harness.apps import until
from harness.deadlines import within
from harness.server import AnvilServer, anvil_server

WAIT = 20  # seconds: a real server answers each of these in well under one
NAMES = [f"r{i}" for i in range(1, 6)]


class Events:
    """A follower of `events` that records (session, word) and lets a test wait for a given one."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self.lines: list[str] = []

    async def follow(self, fs: AsyncClient, until_seen: set[tuple[str, str]]) -> None:
        async with fs.follow("events") as lines:
            async for line in lines:
                self.lines.append(line)
                self.seen.add(tuple(line.split()[1:3]))
                if until_seen <= self.seen:
                    return


async def test_five_waits_and_a_follow_of_events_in_flight_on_one_connection(anvil_server: AnvilServer):
    events = Events()
    answers: dict[str, bytes] = {}
    async with await AsyncClient.connect(anvil_server.address) as fs:

        async def wait(name: str) -> None:
            answers[name] = await fs.read_once(f"{name}/wait")

        with within(WAIT, "five waits and the events follower to be answered"):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(events.follow, fs, {(name, "await") for name in NAMES})
                await until(lambda: fs.statistics().waiting == ("Tread",), "the follower's read in flight")
                for name in NAMES:
                    assert await fs.ctl("ctl", f"new sim /tmp name={name}") == name
                    await fs.write(f"{name}/in", b"sim:hang\n")  # runs until interrupted
                    nursery.start_soon(wait, name)
                await until(lambda: fs.statistics().waiting == ("Tread",) * 6 and {(n, "running") for n in NAMES} <= events.seen,
                            "five waits and the follow in flight, every turn running")
                assert not answers  # all six are blocked on the server at once
                for name in NAMES:
                    await fs.write(f"{name}/ctl", b"interrupt\n")
        assert answers == {name: b"await\n" for name in NAMES}
        assert all(any(re.search(rf" {n} await simulated interrupted", line) for line in events.lines) for n in NAMES)
        await until(lambda: fs.in_flight == 0, "the waits' clunks answered (sent after the answers, not waited for)")
        assert await fs.read("errors") == b"", "the server recorded an error"


async def test_a_cancelled_wait_leaves_no_blocked_read_and_the_connection_usable(anvil_server: AnvilServer):
    async with await AsyncClient.connect(anvil_server.address) as fs:
        with within(WAIT, "the session's hanging turn to run"):
            async with fs.follow("events") as lines:  # open before the prompt: its running line comes after
                await fs.ctl("ctl", "new sim /tmp name=busy")
                await fs.write("busy/in", b"sim:hang\n")
                async for line in lines:
                    if line.split()[1:3] == ["busy", "running"]:
                        break
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(fs.read_once, "busy/wait")
                with within(WAIT, "the wait to block"):
                    await until(lambda: fs.statistics().waiting == ("Tread",))
                scope.cancel()
        assert scope.cancelled_caught and fs.in_flight == 0
        with within(WAIT, "requests after the cancel"):
            assert (await fs.read("list")).startswith(b"busy sim running")
            await fs.write("busy/ctl", b"interrupt\n")  # had the read stayed, it would be answered now
            assert await fs.read_once("busy/wait") == b"await\n"  # a new wait, answered
            assert await fs.read("errors") == b"", "the server recorded an error"
        assert fs.in_flight == 0

    trace = anvil_server.trace()
    [(ftag, tag)] = re.findall(r"-> Tflush tag (\d+) oldtag (\d+)\n", trace)
    assert re.search(rf"<- Rflush tag {ftag}\n", trace)
    [fid] = re.findall(rf"-> Tread tag {tag} fid (\d+) offset 0 ", trace)
    assert not re.search(rf"<- Rread tag {tag} ", trace), "the flushed wait was answered after all"
    assert re.search(rf"-> Tclunk tag \d+ fid {fid}\n", trace)


async def test_connect_by_service_name_and_who_the_client_says_it_is(anvil_server: AnvilServer, monkeypatch):
    monkeypatch.setenv("NAMESPACE", str(anvil_server.namespace))
    monkeypatch.setenv("ANVILFS_SESSION", "conductor")
    with within(WAIT, "connect, a prompt and its turn"):
        async with await AsyncClient.connect() as fs:  # "agent" in $NAMESPACE, as `anvilfs read agent/...`
            await fs.ctl("ctl", "new sim /tmp name=bot1")
            await fs.write("bot1/in", b"hello\n")
            assert await fs.read_once("bot1/wait") == b"await\n"
            assert re.search(rb"--- prompt 1 from conductor ", await fs.read("bot1/log"))
            with pytest.raises(ServerError, match="unknown command 'bogus'"):
                await fs.write("bot1/ctl", b"bogus\n")  # a session's ctl is write-only: no read-back
        async with await AsyncClient.connect("agent", uname="someone") as fs:
            await fs.write("bot1/in", b"again\n")
            assert await fs.read_once("bot1/wait") == b"await\n"
            assert re.search(rb"--- prompt 2 from someone ", await fs.read("bot1/log"))


async def test_no_server_at_the_address_says_what_to_start(tmp_path):
    with within(WAIT, "the failed connect"):
        with pytest.raises(AddressError, match=r"cannot connect to unix!.*/agent: no such file or directory; "
                                               r"is `anvilfs serve` running\?"):
            await AsyncClient.connect(f"unix!{tmp_path}/agent")
        with pytest.raises(AddressError, match="bad address 'tcp!host'"):
            await AsyncClient.connect("tcp!host")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_over_tcp_the_token_is_the_aname(monkeypatch):
    port = free_port()
    with anvil_server(extra_args=["--listen", f"tcp!127.0.0.1!{port}"]) as srv:
        token = (srv.state / "token").read_text().strip()
        monkeypatch.setenv("ANVILFS_TOKEN", token)
        with within(WAIT, "the TCP connects"):
            async with await AsyncClient.connect(f"tcp!127.0.0.1!{port}") as fs:
                assert await fs.read("list") == b""
            with pytest.raises(ServerError, match="token"):
                await AsyncClient.connect(f"tcp!127.0.0.1!{port}", aname="not-the-token")


def test_the_errors_are_the_blocking_clients_own():
    assert (aioclient.ServerError, aioclient.ConnectionLost, aioclient.AddressError) == (
        client.ServerError, client.ConnectionLost, client.AddressError)
