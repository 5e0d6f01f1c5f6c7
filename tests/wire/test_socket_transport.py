"""The same conversations over a unix socket pair: the server's SocketTransport (reads without a
wait, sends without an await) answers as the in-memory stream does, flush and batches included."""

from __future__ import annotations

from anvilfs.ninep import Dialect, encode, parse_message
from anvilfs.server import Limits
from harness.apps import until
from harness.transcript import HELLO, served

STATUS_READ = """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 status]
< Rwalk tag 2 wqids [(0x80 0 *) (0x0 * *)]
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 qid * iounit 8168
> Tread tag 4 fid 1 offset 0 count 8168
< Rread tag 4 data "idle simulated\\n"
> Tclunk tag 5 fid 1
< Rclunk tag 5
"""


async def test_a_status_read_and_a_flushed_blocked_read():
    async with served(sockets=True) as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await until(lambda: app.sessions.get("bot1").status_line().startswith("idle"), "bot1 idle")
        await peer.play(HELLO + STATUS_READ + """
> Twalk tag 6 fid 0 newfid 2 wnames [events]
< Rwalk tag 6 *
> Topen tag 7 fid 2 mode 0
< Ropen tag 7 *
> Tread tag 8 fid 2 offset 0 count 100
> Tflush tag 9 oldtag 8
> Tflush tag 10 oldtag 9
< Rflush tag 9
< Rflush tag 10
> Tclunk tag 11 fid 2
< Rclunk tag 11
""")


async def test_a_batch_is_answered_in_order_in_one_piece_or_more():
    async with served(sockets=True) as (app, [peer]):
        await peer.play(HELLO)
        batch = [f"Twalk tag {t} fid 0 newfid {t} wnames [list]" for t in range(2, 202)]
        batch += [f"Tclunk tag {t} fid {t - 200}" for t in range(202, 402)]
        await peer.send(*batch)
        for t in range(2, 202):
            assert (await peer.receive_text()).startswith(f"Rwalk tag {t} ")
        for t in range(202, 402):
            assert await peer.receive_text() == f"Rclunk tag {t}"


async def test_replies_past_the_unsent_limit_still_all_arrive():
    """Reads whose replies pass max_unsent: the loop sends before it handles the rest of the batch."""
    limits = Limits(max_unsent=4096)
    async with served(sockets=True, limits=limits) as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [backends]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 *
""")
        await peer.send_raw(b"".join(encode(parse_message(f"Tread tag {t} fid 1 offset 0 count 8000"), Dialect.P2000)
                                     for t in range(10, 60)))
        for t in range(10, 60):
            assert (await peer.receive_text()).startswith(f"Rread tag {t} data ")
