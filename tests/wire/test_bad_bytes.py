"""Malformed input closes only the connection that sent it, or gets an error.

Each test breaks one connection in one way and then proves that a second
connection to the same server is still served.
"""

from __future__ import annotations

import struct

from harness.transcript import HELLO, served


def frame(type_id: int, tag: int, body: bytes) -> bytes:
    return struct.pack("<IBH", 7 + len(body), type_id, tag) + body


async def still_serving(peer) -> None:
    await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [list]
< Rwalk tag 2 *
""")


async def test_size_smaller_than_header_closes_only_that_connection():
    async with served(clients=2) as (app, [bad, good]):
        await bad.send_raw(struct.pack("<I", 3) + b"xyz")
        assert await bad.closed()
        await still_serving(good)
        assert "smaller than a 7-byte header" in app.errors.text()


async def test_size_larger_than_msize_closes_only_that_connection():
    async with served(clients=2) as (app, [bad, good]):
        await bad.play(HELLO)
        await bad.send_raw(struct.pack("<IBH", 9000, 118, 1))
        assert await bad.closed()
        await still_serving(good)
        assert "larger than msize 8192" in app.errors.text()


async def test_truncated_frame_then_hangup_ends_only_that_connection():
    async with served(clients=2) as (app, [bad, good]):
        await bad.send_raw(struct.pack("<IBH", 40, 100, 0xFFFF) + b"\x00\x20")
        await bad.stream.aclose()  # hang up in the middle of the frame
        await still_serving(good)


async def test_body_shorter_than_its_fields_gets_rerror_and_connection_lives():
    async with served(clients=2) as (app, [bad, good]):
        await bad.play(HELLO)
        await bad.send_raw(frame(110, 9, b"\x00\x00"))  # a Twalk cut inside its fid
        assert await bad.receive_text() == 'Rerror tag 9 ename "invalid: message ends inside fid"'
        await bad.play("""
> Tstat tag 10 fid 0
< Rstat tag 10 *
""")
        await still_serving(good)
        # recorded as what it is, not under the path fid 0 happens to name (the root: "/")
        [line] = [line for line in app.errors.text().splitlines() if "ends inside fid" in line]
        assert " a message that does not decode: message ends inside fid" in line, line


async def test_unknown_message_type_gets_rerror():
    async with served(clients=2) as (app, [bad, good]):
        await bad.play(HELLO)
        await bad.send_raw(frame(200, 3, b"junk"))
        assert await bad.receive_text() == 'Rerror tag 3 ename "invalid: unknown message type 200 in 9P2000"'
        await bad.send_raw(frame(12, 4, b"\x00" * 8))  # Tlopen does not exist in 9P2000
        assert await bad.receive_text() == 'Rerror tag 4 ename "invalid: unknown message type 12 in 9P2000"'
        await still_serving(good)


async def test_invalid_utf8_name_gets_rerror():
    async with served(clients=2) as (app, [bad, good]):
        await bad.play(HELLO)
        body = struct.pack("<IIH", 0, 1, 1) + struct.pack("<H", 2) + b"\xff\xfe"
        await bad.send_raw(frame(110, 5, body))
        assert await bad.receive_text() == 'Rerror tag 5 ename "invalid: wnames is not valid UTF-8"'
        await still_serving(good)
        await bad.play("""
> Twalk tag 6 fid 0 newfid 1 wnames [ctl]
< Rwalk tag 6 *
""")


async def test_reply_type_sent_as_request_gets_rerror():
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Rclunk tag 4
< Rerror tag 4 ename "invalid: Rclunk is a reply, not a request"
""")


async def test_requests_before_version_are_refused():
    async with served() as (app, [peer]):
        await peer.play("""
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""
< Rerror tag 1 ename "invalid: no version negotiated: send Tversion first"
""")
