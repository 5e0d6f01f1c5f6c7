"""What clients write to open files is held until their clunk: bounded per connection and for the whole server."""

from __future__ import annotations

import errno

from anvilfs.app import App
from anvilfs.ninep import messages as m
from anvilfs.server import Limits
from anvilfs.server.state import CollectBudget
from anvilfs.sessions import SessionLimits
from harness.apps import until
from harness.transcript import served

KiB = 1 << 10
LIMITS = Limits(max_collected_bytes=64 * KiB, max_collected_bytes_server=96 * KiB)


async def _hello(peer) -> None:
    await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion tag 65535 msize 8192 version 9P2000.L
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 4294967295
< Rattach tag 1 qid (0x80 0 *)
""")


async def _fill(peer, fid: int, kib: int) -> m.Message:
    """Open bot1/in on `fid` and write `kib` KiB to it, 4 KiB a Twrite; the reply to the last (or first refused) write."""
    await peer.send(f"Twalk tag 2 fid 0 newfid {fid} wnames [bot1 in]", f"Tlopen tag 3 fid {fid} flags 1")
    assert isinstance(await peer.receive(), m.Rwalk) and isinstance(await peer.receive(), m.Rlopen)
    reply = None
    for k in range(kib // 4):
        await peer.send(f'Twrite tag 4 fid {fid} offset {k * 4096} data "{"x" * 4096}"')
        reply = await peer.receive()
        if not isinstance(reply, m.Rwrite):
            return reply
    return reply


async def test_open_prompts_are_bounded_per_connection_and_freed_at_clunk(autojump_clock):
    before = CollectBudget.server_held  # the whole process's count: other tests' connections may hold some
    app = App(limits=SessionLimits(max_prompt_bytes=1 << 20))
    async with served(app, limits=LIMITS) as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await _hello(peer)
        assert isinstance(await _fill(peer, 10, 48), m.Rwrite)  # 48 KiB held for fid 10's clunk
        refused = await _fill(peer, 11, 32)  # 16 KiB more fit, then no more
        assert isinstance(refused, m.Rlerror) and refused.ecode == errno.ENOMEM
        assert "at most 65536" in app.errors.text() and "close (submit) some open files first" in app.errors.text()
        await peer.send("Tclunk tag 5 fid 11")
        assert isinstance(await peer.receive(), m.Rclunk)
        await peer.send("Tclunk tag 6 fid 10")  # submitted: the 48 KiB are the session's now, not the connection's
        assert isinstance(await peer.receive(), m.Rclunk)
        assert isinstance(await _fill(peer, 12, 48), m.Rwrite)
        await until(lambda: app.sessions.get("bot1").turn_count >= 1)
    assert CollectBudget.server_held == before, "every byte counted was given back when the connections closed"


async def test_all_connections_together_are_bounded_too(autojump_clock):
    app = App(limits=SessionLimits(max_prompt_bytes=1 << 20))
    async with served(app, limits=LIMITS, clients=2) as (app, [one, two]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await _hello(one)
        await _hello(two)
        assert isinstance(await _fill(one, 10, 60), m.Rwrite)
        refused = await _fill(two, 10, 60)  # within its own 64 KiB, past the server's 96
        assert isinstance(refused, m.Rlerror) and refused.ecode == errno.ENOMEM
        assert "the server holds" in app.errors.text()


async def test_a_full_budget_never_refuses_ctl_writes_or_a_retried_write(autojump_clock):
    app = App(limits=SessionLimits(max_prompt_bytes=1 << 20))
    async with served(app, limits=LIMITS, clients=2) as (app, [one, two]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await _hello(one)
        await _hello(two)
        assert isinstance(await _fill(one, 10, 64), m.Rwrite)  # this connection is at its limit
        await one.send(f'Twrite tag 4 fid 10 offset {60 * 1024} data "{"x" * 4096}"')  # a retry adds nothing
        assert isinstance(await one.receive(), m.Rwrite)
        assert isinstance(await _fill(two, 10, 32), m.Rwrite)  # and the server is at its limit
        await two.send("Twalk tag 7 fid 0 newfid 20 wnames [bot1 ctl]", "Tlopen tag 8 fid 20 flags 1",
                       'Twrite tag 9 fid 20 offset 0 data "interrupt\\n"')
        assert isinstance(await two.receive(), m.Rwalk) and isinstance(await two.receive(), m.Rlopen)
        reply = await two.receive()
        assert isinstance(reply, m.Rlerror) and reply.ecode == errno.EBUSY, reply  # refused for its own reason


def test_a_tauths_aname_is_hidden_in_the_trace_too():
    from anvilfs.ninep import format_message
    from anvilfs.server.connection import _for_trace

    for msg in (m.Tauth(tag=1, afid=1, uname="u", aname="SECRET"),
                m.Tattach(tag=1, fid=0, afid=0xFFFFFFFF, uname="u", aname="SECRET")):
        assert "SECRET" not in format_message(_for_trace(msg))
