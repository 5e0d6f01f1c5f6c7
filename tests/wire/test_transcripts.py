"""Whole conversations with the server, in the canonical text form."""

from __future__ import annotations

import trio
import trio.testing

from harness.apps import until
from harness.transcript import HELLO, served


async def test_read_list_and_new_session():
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
< Rwalk tag 7 wqids [(0x0 0 *)]
> Topen tag 8 fid 2 mode 0
< Ropen tag 8 qid * iounit 8168
> Tread tag 9 fid 2 offset 0 count 8168
< Rread tag 9 data "bot1 sim starting - /tmp simulated\\n"
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


async def test_write_to_read_only_file_and_read_of_write_only():
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [list]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 1
< Rerror tag 3 ename "permission denied: list is read-only (mode 0400)"
> Topen tag 4 fid 1 mode 16
< Ropen tag 4 *
> Twrite tag 5 fid 1 offset 0 data "x"
< Rerror tag 5 ename "bad file: fid is not open for writing"
""")


async def test_truncation_is_accepted_and_ignored():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 0
< Rattach *
> Twalk tag 2 fid 0 newfid 1 wnames [ctl]
< Rwalk *
> Tlopen tag 3 fid 1 flags 513
< Rlopen *
> Tsetattr tag 4 fid 1 valid 8 size 0
< Rsetattr tag 4
> Tsetattr tag 5 fid 1 valid 8 size 10
< Rlerror tag 5 ecode 22
""")


async def test_ops_that_make_no_sense_get_errors_not_hangups():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 0
< Rattach *
> Tmkdir tag 2 dfid 0 name x mode 493 gid 0
< Rlerror tag 2 ecode 1
> Tlcreate tag 3 fid 0 name x flags 0 mode 420 gid 0
< Rlerror tag 3 ecode 1
> Tunlinkat tag 4 dirfid 0 name list flags 0
< Rlerror tag 4 ecode 1
> Trenameat tag 5 olddirfid 0 oldname list newdirfid 0 newname l2
< Rlerror tag 5 ecode 1
> Txattrwalk tag 6 fid 0 newfid 9 name security.selinux
< Rlerror tag 6 ecode 95
> Tfsync tag 7 fid 0 datasync 0
< Rfsync tag 7
> Tlock tag 8 fid 0 type 1 flags 0 start 0 length 0 proc_id 1 client_id x
< Rlock tag 8 status 0
> Tgetlock tag 9 fid 0 type 1 start 0 length 0 proc_id 1 client_id x
< Rgetlock tag 9 type 2 start 0 length 0 proc_id 1 client_id x
> Tstatfs tag 10 fid 0
< Rstatfs tag 10 type 16914839 bsize 4096 *
> Tgetattr tag 11 fid 0 request_mask 2047
< Rgetattr tag 11 valid 2047 qid (0x80 0 *) mode 0o40700 *
> Treaddir tag 12 fid 0 offset 0 count 100
< Rlerror tag 12 ecode 9
""")


async def test_a_bug_behind_a_file_is_an_error_not_a_hangup():
    async with served() as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.get("bot1").log_text = lambda: 1 / 0  # a broken render
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 log]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 *
> Tread tag 4 fid 1 offset 0 count 100
< Rerror tag 4 ename "i/o error: internal error: ZeroDivisionError: division by zero"
> Tstat tag 5 fid 0
< Rstat tag 5 *
""")


async def test_an_error_quoting_a_huge_write_is_cut_to_fit():
    """A line within the 4000-byte limit whose error quotes it: the reply is cut, the error log bounded."""
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [ctl]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 1
< Ropen tag 3 *
""")
        await peer.send(f'Twrite tag 4 fid 1 offset 0 data "{"x" * 3990}"')
        reply = await peer.receive()
        # cut to plan9port's 127 bytes, and still worded for EINVAL (ninep/errstr.py)
        assert reply.ename.startswith("invalid: unknown command 'xxx") and reply.ename.endswith("\u2026")
        assert len(reply.ename.encode()) <= 127
        assert "xxx" in app.errors.text() and len(app.errors.text().encode()) <= 1100
        await peer.play("""
> Tclunk tag 5 fid 1
< Rclunk tag 5
""")


async def test_a_walk_to_a_huge_name_is_answered():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 1048576 version 9P2000
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""
< Rattach *
""")
        await peer.send(f"Twalk tag 2 fid 0 newfid 1 wnames [{'n' * 65530}]")
        reply = await peer.receive()
        assert reply.ename.startswith("does not exist: 'nnnn") and len(reply.ename.encode()) <= 127
        await peer.play("""
> Tstat tag 3 fid 0
< Rstat tag 3 *
""")


async def test_a_prompt_that_is_not_utf8_is_refused_at_the_write(autojump_clock):
    # virtual time: the sim agent starts (and takes the queued prompt) only once the transcript is done
    async with served() as (app, [peer]):
        app.sessions.new("sim", "/tmp", name="bot1")
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [bot1 in]
< Rwalk tag 2 *
> Topen tag 3 fid 1 mode 1
< Ropen tag 3 *
> Twrite tag 4 fid 1 offset 0 data "caf\\xc3"
< Rwrite tag 4 count 4
> Twrite tag 5 fid 1 offset 4 data "\\xa9 ok"
< Rwrite tag 5 count 4
> Twrite tag 6 fid 1 offset 8 data " caf\\xe9 code"
< Rerror tag 6 ename "invalid: in: not valid UTF-8 at byte 12; write text"
> Tclunk tag 7 fid 1
< Rclunk tag 7
""")
        assert [p.text for p in app.sessions.get("bot1").queue] == ["café ok"]  # what was accepted runs


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


async def test_create_of_an_existing_file_opens_it_and_an_empty_open_is_no_prompt(autojump_clock):
    # p9fs in 9P2000.u: Tcreate with OREAD, clunk, then open for writing (SPEC §4)
    async with served() as (app, [peer]):
        session = app.sessions.new("sim", "/tmp", name="bot1")
        await until(lambda: not session.busy)
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.u
< Rversion tag 65535 msize 8192 version 9P2000.u
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 1000
< Rattach tag 1 *
> Twalk tag 2 fid 0 newfid 1 wnames [bot1]
< Rwalk tag 2 *
> Tcreate tag 3 fid 1 name in perm 493 mode 0 extension ""
< Rcreate tag 3 qid (0x0 0 *) iounit 8168
> Tclunk tag 4 fid 1
< Rclunk tag 4
""")
        await trio.testing.wait_all_tasks_blocked()
        assert session.turn_count == 0 and not session.busy  # the empty open and close was no prompt
        await peer.play("""
> Twalk tag 5 fid 0 newfid 2 wnames [bot1]
< Rwalk tag 5 *
> Tcreate tag 6 fid 2 name in perm 420 mode 17 extension ""
< Rcreate tag 6 *
> Twrite tag 7 fid 2 offset 0 data "hello"
< Rwrite tag 7 count 5
> Tclunk tag 8 fid 2
< Rclunk tag 8
> Twalk tag 9 fid 0 newfid 3 wnames [bot1 wait]
< Rwalk tag 9 *
> Topen tag 10 fid 3 mode 0
< Ropen tag 10 *
> Tread tag 11 fid 3 offset 0 count 100
< Rread tag 11 data "await\\n"
""")
        assert session.turn_count == 1 and "hello" in session.out


async def test_lcreate_of_an_existing_file_opens_it_unless_exclusive():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 0
< Rattach *
> Twalk tag 2 fid 0 newfid 1 wnames []
< Rwalk tag 2 wqids []
# O_WRONLY|O_CREAT|O_EXCL: EEXIST, and the fid still names the directory
> Tlcreate tag 3 fid 1 name ctl flags 193 mode 420 gid 0
< Rlerror tag 3 ecode 17
# O_WRONLY|O_CREAT|O_TRUNC: ctl is opened for writing, truncation ignored
> Tlcreate tag 4 fid 1 name ctl flags 577 mode 420 gid 0
< Rlcreate tag 4 qid (0x0 0 *) iounit 8168
> Twrite tag 5 fid 1 offset 0 data "new sim /tmp name=bot2\\n"
< Rwrite tag 5 count 23
> Tclunk tag 6 fid 1
< Rclunk tag 6
# a name that is not there cannot be made
> Twalk tag 7 fid 0 newfid 2 wnames []
< Rwalk tag 7 wqids []
> Tlcreate tag 8 fid 2 name notes flags 577 mode 420 gid 0
< Rlerror tag 8 ecode 1
# a session's directory is there, but a create does not open directories
> Tlcreate tag 9 fid 2 name bot2 flags 577 mode 420 gid 0
< Rlerror tag 9 ecode 17
# list is read-only: a create asking to write opens it for reading
> Tlcreate tag 10 fid 2 name list flags 577 mode 420 gid 0
< Rlcreate tag 10 *
> Tread tag 11 fid 2 offset 0 count 100
< Rread tag 11 data "bot2 sim *"
""")
        assert app.sessions.get("bot2").definition.backend == "sim"
        assert "cannot create 'notes'" in app.errors.text()


async def test_create_in_plain_9p2000_refuses_new_names_and_directories():
    async with served() as (app, [peer]):
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames []
< Rwalk tag 2 wqids []
> Tcreate tag 3 fid 1 name notes perm 420 mode 1
< Rerror tag 3 ename "not permitted: cannot create 'notes': anvilfs makes its files itself (sessions: 'new' on ctl)"
> Tcreate tag 4 fid 1 name ctl perm 2147484141 mode 0
< Rerror tag 4 ename "ctl exists already (an open, or a create without O_EXCL, opens it)"
> Tcreate tag 5 fid 1 name ctl perm 420 mode 66
< Rerror tag 5 ename "not permitted: ctl: remove-on-close is not possible on a synthetic file"
> Tcreate tag 6 fid 1 name ctl perm 420 mode 2
< Rcreate tag 6 *
""")
