"""Whole conversations with the server, in the canonical text form: creates (Tcreate, Tlcreate) and
truncation, which shells and mounts send to files that exist."""

from __future__ import annotations

import trio
import trio.testing

from harness.apps import until
from harness.transcript import HELLO, HELLO_L, served


async def test_truncation_is_accepted_and_ignored():
    async with served() as (app, [peer]):
        await peer.play(HELLO_L + """
> Twalk tag 2 fid 0 newfid 1 wnames [ctl]
< Rwalk *
> Tlopen tag 3 fid 1 flags 513
< Rlopen *
> Tsetattr tag 4 fid 1 valid 8 size 0
< Rsetattr tag 4
> Tsetattr tag 5 fid 1 valid 8 size 10
< Rlerror tag 5 ecode 22
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
        await peer.play(HELLO_L + """
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
