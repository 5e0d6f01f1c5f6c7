"""No answered change lost from the git history: a writer SIGKILLed 20 times (with its git, or alone), real git throughout.

The writer saves as the server does (TomlObjects through the database's writer thread: the file, then its
message in STATE/anvilfs.db) and prints a change as done once that is on disk, as the server answers it."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tomllib

import trio

from anvilfs.storage import GitHistory, PrivateDir
from harness.git_history import DEADLINE, git, messages_in_history, state_db

WRITER = r'''
"""Writes bead files with their messages, printing "done NAME REV" once both are on disk (answered)."""
import random, sys, trio
from anvilfs.storage import HISTORY_SCHEMA, Database, GitHistory, PrivateDir, TomlObjects

async def main(state, round_no, seed):
    rng = random.Random(seed)
    root = PrivateDir(state)
    db = Database(root, "anvilfs.db", HISTORY_SCHEMA)
    history = GitHistory(root, db, on_error=lambda text: print("error", text, file=sys.stderr, flush=True),
                         group_delay=rng.choice((0, 0.002, 0.01)))  # git runs most of the time: kills land in it
    beads = TomlObjects(root.subdir("beads"), "bead", db, history)
    made = []
    async with trio.open_nursery() as nursery:
        await nursery.start(history.run)
        for rev in range(1_000_000):
            if made and rng.random() < 0.3:
                name, verb = rng.choice(made), "Updated"
            else:
                name, verb = f"r{round_no}-{rev}", "Created"
                made.append(name)
            await beads.write(name, {"rev": rev}, message=f"{verb}: {name} rev {rev}").wait()
            print("done", name, rev, flush=True)
            await trio.sleep(rng.choice((0, 0, 0.001, 0.004)))  # requests arriving, not synchronisation

trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
'''


async def run_writer_until_killed(script, state, round_no: int, rng) -> tuple[list[tuple[str, int]], str]:
    """Start the writer in its own process group and SIGKILL it after a random number of answered
    changes: with its git (the group) in even rounds, alone in odd ones (its git runs on, and the
    restarted server must wait for it); every change it printed as done, and its stderr."""
    stderr = state.parent / f"writer{round_no}.err"
    with open(stderr, "wb") as err:
        proc = await trio.lowlevel.open_process(
            [sys.executable, str(script), str(state), str(round_no), str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    done, buffer, wanted = [], b"", rng.randint(1, 120)

    async def read_some() -> bool:
        nonlocal buffer
        chunk = await proc.stdout.receive_some()
        *lines, buffer = (buffer + chunk).split(b"\n")
        done.extend((name, int(rev)) for _, name, rev in (line.decode().split() for line in lines))
        return bool(chunk)

    try:
        with trio.fail_after(DEADLINE * 3):
            while len(done) < wanted:
                assert await read_some(), f"round {round_no}: the writer ended: {stderr.read_text()}"
        await trio.sleep(rng.uniform(0, 0.01))  # kill at a random point, not only right after a print
    finally:
        (os.kill if round_no % 2 else os.killpg)(proc.pid, signal.SIGKILL)
        with trio.fail_after(DEADLINE):
            await proc.wait()
            while await read_some():  # printed before it died: answered too
                pass
    return done, stderr.read_text()


def check_round(state, round_no: int, done: list[tuple[str, int]], errors: str) -> None:
    messages = messages_in_history(state)
    assert len(messages) == len(set(messages)), f"round {round_no}: a message was committed twice"
    committed = set(messages)
    last_rev = {}
    for name, rev in done:
        verb = "Created" if name == f"r{round_no}-{rev}" else "Updated"
        assert f"{verb}: {name} rev {rev}" in committed, f"round {round_no}: {verb} {name} rev {rev} not in git log"
        last_rev[name] = rev
    for name, rev in last_rev.items():
        on_disk = tomllib.loads((state / "beads" / f"{name}.toml").read_text())["bead"]["rev"]
        assert on_disk >= rev, f"round {round_no}: {name} has rev {on_disk}, rev {rev} was answered"
    assert git(state, "status", "--porcelain", "--", "beads") == "", f"round {round_no}: files not committed"
    check_each_commit_holds_its_changes(state, round_no)
    fsck = subprocess.run(["git", "--git-dir", str(state / ".git"), "fsck", "--no-dangling", "--strict"],
                          capture_output=True, text=True, timeout=DEADLINE)
    assert fsck.returncode == 0 and not fsck.stdout + fsck.stderr, f"round {round_no}: git fsck: {fsck.stderr}"
    assert "error" not in errors, f"round {round_no}: the writer reported: {errors}"


def check_each_commit_holds_its_changes(state, round_no: int) -> None:
    """A message's commit holds its file at that rev or a later one (a round stages only its rows' files,
    d47279a): not a commit whose tree is older than what its message says."""
    wanted = []  # (commit, bead, rev)
    for entry in git(state, "log", "--format=%H%n%B%x00").split("\0"):
        commit, _, body = entry.strip().partition("\n")
        for line in body.splitlines():
            words = line.split()
            if len(words) == 4 and words[0] in ("Created:", "Updated:") and words[2] == "rev":
                wanted.append((commit, words[1], int(words[3])))
    if not wanted:
        return
    found = subprocess.run(["git", "--git-dir", str(state / ".git"), "cat-file", "--batch"], capture_output=True,
                           input="".join(f"{c}:beads/{name}.toml\n" for c, name, _ in wanted).encode(),
                           timeout=DEADLINE).stdout
    for commit, name, rev in wanted:
        header, _, found = found.partition(b"\n")
        assert not header.endswith(b"missing"), f"round {round_no}: {commit} says {name} rev {rev}; no file"
        size = int(header.split()[2])
        text, found = found[:size], found[size + 1:]
        in_tree = tomllib.loads(text.decode())["bead"]["rev"]
        assert in_tree >= rev, f"round {round_no}: {commit} says {name} rev {rev}; its tree has rev {in_tree}"


async def test_every_answered_change_is_in_history_over_20_sigkills(state, tmp_path):
    rng = random.Random(7)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    total = locks = 0
    for round_no in range(20):
        done, errors = await run_writer_until_killed(script, state, round_no, rng)
        with state_db(state) as db:
            root = PrivateDir(state)
            root.subdir("beads")  # as the server's beads open: the temporary file of a write killed midway goes
            history = GitHistory(root, db)  # the restarted server
            try:
                locks += bool(history.stale_locks_removed)
                with trio.fail_after(DEADLINE):
                    await history.flush()
            finally:
                history.close()
                root.close()
        check_round(state, round_no, done, errors)
        total += len(done)
    print(f"{total} answered changes over 20 SIGKILLs: all in history once; {locks} restarts found git's locks")
