"""A power cut under a real server loses nothing it answered: sessions' turns and answers, prompts, beads, mail.

The server runs with tests/harness/powercut.c preloaded, which keeps what an
ext4 disk would hold after a power cut at each moment (its model: a file's
bytes are on disk at its fsync or fdatasync, names at the journal commit an
fsync makes). `PowerCuts.cut` kills the server and replaces its state
directory by that image; the next server starts on it. Everything is read
back through the tree (and the beads' history through git), so the tests
hold whatever the server stores its state in.

POWERCUT_DROP=TEXT in the environment makes the shim ignore the flushes of
paths containing TEXT, as a server that skips them: these tests must then
fail (e.g. POWERCUT_DROP=prompts/ loses prompts, =mail/ mail), which shows
that they can.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harness.power_cut import PowerCuts
from harness.server import AnvilServer
from harness.tree_load import Load, git, inboxes, new_sessions, restart_sessions

pytestmark = pytest.mark.needs("gcc")  # builds the shim

DROP = os.environ.get("POWERCUT_DROP", "")  # only to show that the tests catch a skipped flush
ROUNDS = 8
SESSIONS = ["s0", "s1", "s2"]


@pytest.fixture
def cuts():
    base = Path(tempfile.mkdtemp(prefix="anvp.", dir="/tmp"))  # short: the socket's path must fit
    cuts = PowerCuts(base, drop=DROP)
    try:
        yield cuts
    finally:
        for srv in cuts.servers:
            if srv.proc.poll() is None:
                srv.stop()  # a failed test must not leave its server running
        shutil.rmtree(base, ignore_errors=True)


def sessions_seen(srv: AnvilServer) -> dict[str, tuple[bytes, bytes, bytes]]:
    """Each session's transcript, last answer and queue, as the tree shows them."""
    with srv.connect("glenda", timeout=20) as client:
        names = [line.split()[0] for line in client.read_file("list").decode().splitlines()]
        return {name: tuple(client.read_file(f"{name}/{f}") for f in ("log", "out", "queue")) for name in names}


def quiet(srv: AnvilServer, names: list[str]) -> None:
    """No turn running (a read of wait returns once the session is not busy)."""
    with srv.connect("glenda", timeout=20) as client:
        for name in names:
            client.read_file(f"{name}/wait")


def cut_and_compare(cuts: PowerCuts, srv: AnvilServer, what: str) -> AnvilServer:
    cuts.settle()  # a quiet moment: nothing left to flush
    had = sessions_seen(srv)
    cuts.cut(srv)
    srv = cuts.start()
    back = sessions_seen(srv)
    assert back.keys() == had.keys(), f"{what}: sessions {sorted(had)} before the cut, {sorted(back)} after"
    for name, (log, out, queue) in had.items():
        assert back[name] == (log, out, queue), f"{what}: {name}'s log, out or queue changed by the cut"
    return srv


def test_a_power_cut_at_any_quiet_moment_loses_no_session_turn_or_answer(cuts):
    srv = cuts.start()
    with srv.connect("glenda", timeout=20) as client:
        for name in ("bot1", "bot2", "bot3"):
            client.write_file("ctl", f"new sim /tmp name={name}\n".encode())
        client.write_file("bot1/in", b"first question\n")
        client.write_file("bot2/in", b"another\n")
    quiet(srv, ["bot1", "bot2"])
    srv = cut_and_compare(cuts, srv, "after two turns")

    with srv.connect("glenda", timeout=20) as client:
        client.write_file("bot3/ctl", b"stop\n")
        client.write_file("bot3/ctl", b"remove\n")
    srv = cut_and_compare(cuts, srv, "after a remove")  # it stays removed

    with srv.connect("glenda", timeout=20) as client:
        for name in ("bot1", "bot2"):  # back exited from the cut
            client.write_file(f"{name}/ctl", b"restart\n")
        client.write_file("ctl", b"new sim /tmp name=bot3\n")  # the same name again: a new session
        client.write_file("bot3/in", b"hello again\n")
        client.write_file("bot1/in", b"second question\n")
        quiet(srv, ["bot1", "bot3"])
        client.write_file("bot2/ctl", b"stop\n")
    srv = cut_and_compare(cuts, srv, "after more turns and a stop")
    srv.stop()


def test_a_power_cut_at_a_quiet_moment_loses_none_of_the_last_changes_answered(cuts):
    """A change of each kind alone, answered last before a quiet moment: no later flush of anything else
    commits its name to the disk (under load one soon would), so a write that skips its directory's fsync
    is caught here. Before it, a little of everything, as a state to keep."""
    srv = cuts.start()
    new_sessions(srv, SESSIONS)
    srv = cuts.restart(srv)  # git init's files written back: see PowerCuts.restart
    for kind in Load.KINDS:
        restart_sessions(srv, SESSIONS)
        some = Load(srv, SESSIONS, f"{kind}-before", limit=2).start()
        some.join()
        quiet(srv, SESSIONS)
        cuts.settle()
        held = [(who, msg["id"]) for who, msgs in inboxes(srv, ["human", *SESSIONS]).items() for msg in msgs]
        last = Load(srv, SESSIONS, f"{kind}-last", limit=1, kinds=(kind,), acknowledge=held).start()
        last.join()
        cuts.settle()
        cuts.cut(srv)
        srv = cuts.start()
        for load in (some, last):
            lost = load.answered.missing(srv, cuts.state)
            assert not lost, f"{kind} last: {len(lost)} answered changes lost in the cut:\n" + "\n".join(lost[:20])
    srv.stop()


def test_a_power_cut_in_a_new_state_directorys_first_moments_keeps_its_history(cuts):
    """`git init` flushes nothing of .git/HEAD (git 2.39, core.fsync=all or not): unless the server makes the new
    history durable before it answers anything, a cut right after the first change leaves HEAD empty, and git
    refuses the history ("not a git repository") with every change answered since."""
    srv = cuts.start()  # a state directory that does not exist yet
    first = Load(srv, [], "first", limit=1, kinds=("beads",)).start()
    first.join()
    cuts.cut(srv)
    srv = cuts.start()
    lost = first.answered.missing(srv, cuts.state)
    assert not lost, "a cut in a new state directory's first moments lost:\n" + "\n".join(lost)
    assert git(cuts.state, "fsck", "--strict", "--no-dangling").returncode == 0
    srv.stop()


def test_a_power_cut_right_after_a_history_commit_keeps_its_messages(cuts):
    """git never flushes a directory: a commit's last step, its branch's ref renamed into place, is on disk only
    at the next journal commit of anything. The server deletes the commit's messages from its database next;
    that flush is an fdatasync of the write-ahead log, which commits no journal while the log does not grow (as
    after a checkpoint, when SQLite writes it over from its start). A cut then kept the delete and lost the
    commit: answered changes gone from history (seen under load, test_a_power_cut_under_load_...)."""
    srv = cuts.start()
    Load(srv, [], "grow", limit=5, kinds=("beads",)).start().join()  # a log longer than the changes below write
    cuts.settle()
    cuts.checkpoint()
    last = Load(srv, [], "last", limit=1, kinds=("beads",)).start()
    last.join()
    messages, deadline = [m for _, _, m in last.answered.beads], time.monotonic() + 30
    while not all(m in git(cuts.state, "log", "--format=%B").stdout for m in messages):
        assert time.monotonic() < deadline, "the bead's changes were not in history after 30 s"
        time.sleep(0.05)  # polling another process's progress, bounded by the deadline
    cuts.settle()  # and the delete of their messages, which follows the commit at once
    cuts.cut(srv)
    srv = cuts.start()
    lost = last.answered.missing(srv, cuts.state)
    assert not lost, "a cut right after a history commit lost:\n" + "\n".join(lost)
    srv.stop()


@pytest.mark.timeout(600)
def test_a_power_cut_under_load_loses_nothing_answered(cuts):
    """Prompts, bead changes, mail sent and acknowledged, from clients at once; the power cut at a random
    moment, ROUNDS times: every change whose write was answered is there after the cut."""
    rng, state, total = random.Random(33), cuts.state, 0
    srv = cuts.start()
    new_sessions(srv, SESSIONS)
    srv = cuts.restart(srv)  # git init's files written back: see PowerCuts.restart
    to_ack: list[tuple[str, str]] = []
    for round_no in range(ROUNDS):
        restart_sessions(srv, SESSIONS)
        load = Load(srv, SESSIONS, f"r{round_no}", acknowledge=to_ack).start()
        load.wait_for(rng.randint(20, 120))
        time.sleep(rng.uniform(0, 0.02))  # the cut falls anywhere: writes are in flight in every writer
        cuts.cut(srv)
        load.stop()
        done = load.answered
        assert done.prompts and done.beads and done.mail, f"round {round_no}: a writer made no change: {load.failures}"
        srv = cuts.start()
        lost = load.answered.missing(srv, state)
        assert not lost, f"round {round_no}: {len(lost)} answered changes lost in the cut:\n" + "\n".join(lost[:20])
        fsck = git(state, "fsck", "--strict", "--no-dangling")
        assert fsck.returncode == 0, f"round {round_no}: " + fsck.stdout + fsck.stderr
        to_ack = [(who, msg["id"]) for who, msgs in inboxes(srv, ["human", *SESSIONS]).items() for msg in msgs][:40]
        total += load.answered.count()
    srv.stop()
    print(f"{total} answered changes over {ROUNDS} power cuts: none lost")
