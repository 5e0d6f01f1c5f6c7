"""Whole conversations with the server, in the canonical text form."""

from __future__ import annotations

from harness.apps import until
from harness.transcript import HELLO, served


async def test_read_list_and_new_session():
    # the new session's state in `list` is starting or, once its runner ran, idle: which one depends on how
    # the scheduler interleaves its start with this client's next requests (a loaded CI machine saw idle)
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [ctl]
< Rwalk tag 2 wqids [(0x0 0 *)]
> Topen tag 3 fid 1 mode 2
< Ropen tag 3 qid (0x0 0 *) iounit 8168
> Twrite tag 4 fid 1 offset 0 data "new sim /tmp name=bot1\\n"
< Rwrite tag 4 count 23
> Tread tag 5 fid 1 offset 0 count 100
< Rread tag 5 data "bot1\\n"
> Tclunk tag 6 fid 1
< Rclunk tag 6
> Twalk tag 7 fid 0 newfid 2 wnames [list]
< Rwalk tag 7 wqids [(0x0 * *)]
> Topen tag 8 fid 2 mode 0
< Ropen tag 8 qid * iounit 8168
> Tread tag 9 fid 2 offset 0 count 8168
< Rread tag 9 data "bot1 sim * - /tmp simulated\\n"
> Tread tag 10 fid 2 offset 36 count 8168
< Rread tag 10 data ""
""")


async def test_flush_of_blocked_wait_read_gets_rflush_and_no_reply(autojump_clock):
    async with served() as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 wait]
< Rwalk tag 2 wqids [(0x80 0 *) (0x0 * *)]
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 qid * iounit 8168
# the session is busy: this read blocks until flushed
> Tread tag 4 fid 1 offset 0 count 100
> Tflush tag 5 oldtag 4
< Rflush tag 5
# the old tag got no reply: the next reply is the clunk's
> Tclunk tag 6 fid 1
< Rclunk tag 6
""")
        assert app.sessions.get("bot1").busy  # still running: only the read was cancelled


async def test_blocked_wait_read_answers_when_turn_ends(autojump_clock):
    async with served() as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 in]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 1
< Ropen tag 3 *
> Twrite tag 4 fid 1 offset 0 data "hello"
< Rwrite tag 4 count 5
> Tclunk tag 5 fid 1
< Rclunk tag 5
> Twalk tag 6 fid 0 newfid 2 wnames [bot1 wait]
< Rwalk tag 6 *
> Topen tag 7 fid 2 mode 0
< Ropen tag 7 *
> Tread tag 8 fid 2 offset 0 count 100
< Rread tag 8 data "await\\n"
> Tread tag 9 fid 2 offset 6 count 100
< Rread tag 9 data ""
""")
        assert "[simulated]" in app.sessions.get("bot1").out


async def test_flush_of_unknown_tag_is_rflush_not_rerror():
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Tflush tag 2 oldtag 77
< Rflush tag 2
""")


async def test_reuse_of_a_tag_in_flight_is_an_error(autojump_clock):
    async with served() as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 wait]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 *
> Tread tag 4 fid 1 offset 0 count 100
> Tstat tag 4 fid 0
< Rerror tag 4 ename "invalid: tag 4 is already in flight: use another tag"
> Tflush tag 5 oldtag 4
< Rflush tag 5
""")


async def test_clunked_fid_used_again():
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [list]
< Rwalk tag 2 *
> Tclunk tag 3 fid 1
< Rclunk tag 3
> Topen tag 4 fid 1 mode 0
< Rerror tag 4 ename "unknown fid 1"
> Tclunk tag 5 fid 1
< Rerror tag 5 ename "unknown fid 1"
""")


async def test_walk_past_a_file():
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [list x]
< Rwalk tag 2 wqids [(0x0 0 *)]
# a partial walk: newfid was not made
> Tstat tag 3 fid 1
< Rerror tag 3 ename "unknown fid 1"
> Twalk tag 4 fid 0 newfid 1 wnames [list]
< Rwalk tag 4 *
> Twalk tag 5 fid 1 newfid 2 wnames [x]
< Rerror tag 5 ename "walk past list: not a directory"
> Twalk tag 6 fid 0 newfid 3 wnames [nosuch]
< Rerror tag 6 ename "'nosuch' does not exist in /"
""")


async def test_walk_of_more_than_16_names():
    names = " ".join(["a"] * 17)
    async with served() as (app, [peer]):
        await peer.play(HELLO + f"""
> Twalk tag 2 fid 0 newfid 1 wnames [{names}]
< Rerror tag 2 ename "too long: walk of 17 names: at most 16 per Twalk"
""")


async def test_msize_larger_than_allowed_is_clamped():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 4294967295 version 9P2000.L
< Rversion tag 65535 msize 1048576 version 9P2000.L
""")


async def test_a_refused_tversion_leaves_no_session_to_attach_to():
    # the refused Tversion still reset the fids: the old dialect must not go on without a new Tversion
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Tversion tag 65535 msize 100 version 9P2000.u
< Rerror tag 65535 ename "invalid: msize 100 is too small: at least 256"
> Tattach tag 2 fid 0 afid 4294967295 uname glenda aname ""
< Rerror tag 2 ename "invalid: no version negotiated: send Tversion first"
> Tversion tag 65535 msize 8192 version 9P2000
< Rversion tag 65535 msize 8192 version 9P2000
> Tattach tag 3 fid 0 afid 4294967295 uname glenda aname ""
< Rattach tag 3 *
""")


async def test_unknown_version_and_suffix():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P1999
< Rversion tag 65535 msize 8192 version unknown
> Tversion tag 65535 msize 8192 version 9P2000.foo
< Rversion tag 65535 msize 8192 version 9P2000
""")


async def test_auth_is_not_required_and_errors_are_readable_in_dotl():
    # ENOENT (2) is what diod's clients and the kernel take as "no authentication needed"
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion tag 65535 msize 8192 version 9P2000.L
> Tauth tag 1 afid 5 uname glenda aname ""
< Rlerror tag 1 ecode 2
> Tattach tag 2 fid 0 afid 4294967295 uname glenda aname "" n_uname 1000
< Rattach tag 2 *
> Twalk tag 3 fid 0 newfid 1 wnames [ctl]
< Rwalk tag 3 *
> Tlopen tag 4 fid 1 flags 1
< Rlopen tag 4 *
> Twrite tag 5 fid 1 offset 0 data "bogus\\n"
< Rlerror tag 5 ecode 22
""")
        assert "unknown command 'bogus': invalid, see errors for the usage; commands: new <backend> <cwd>" in app.errors.text()
        assert "unknown command 'bogus'" in app.events.text()


async def test_auth_is_not_required_in_dotu_with_enoent():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.u
< Rversion tag 65535 msize 8192 version 9P2000.u
> Tauth tag 1 afid 5 uname glenda aname "" n_uname 1000
< Rerror tag 1 ename "auth not required" errno 2
> Tattach tag 2 fid 0 afid 4294967295 uname glenda aname "" n_uname 1000
< Rattach tag 2 *
""")
        assert "auth" not in app.errors.text()  # every client tries it: not an error worth keeping


async def test_tversion_aborts_a_blocked_read_without_a_reply(autojump_clock):
    async with served() as (app, [peer]):
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 wait]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 *
> Tread tag 4 fid 1 offset 0 count 100
> Tflush tag 5 oldtag 4
> Tversion tag 65535 msize 8192 version 9P2000
< Rversion tag 65535 msize 8192 version 9P2000
""")
        await until(lambda: s.state.value == "running")
        app.sessions.interrupt("bot1")  # the wait would answer now, to a session that is gone
        await until(lambda: not s.busy)
        await peer.play("""
> Tattach tag 4 fid 0 afid 4294967295 uname glenda aname ""
< Rattach tag 4 *
""")
