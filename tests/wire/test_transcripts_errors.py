"""Whole conversations with the server, in the canonical text form: what a client gets wrong, or what
breaks behind a file, is answered with an error, never a hang-up."""

from __future__ import annotations

from harness.transcript import HELLO, HELLO_L, served


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


async def test_ops_that_make_no_sense_get_errors_not_hangups():
    async with served() as (app, [peer]):
        await peer.play(HELLO_L + """
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
