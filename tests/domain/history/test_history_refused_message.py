"""A change whose file reached the disk but whose history message the database refused.

objects.py keeps such a change (memory and file; git commits it as recovered): then the request that
made it must not be told that it failed, or a client that retries on EIO makes it twice (a second bead).
"""

from __future__ import annotations

from anvilfs.storage import TomlObjects
from anvilfs.waitable import collecting, on_disk
from anvilfs.errors import AnvilError
from harness.deadlines import within

REFUSE = ("CREATE TRIGGER refuse_messages BEFORE INSERT ON history_pending "
          "BEGIN SELECT RAISE(ABORT, 'the database refused the message'); END")


async def test_a_kept_change_whose_message_was_refused_is_not_answered_as_failed(state, db, started):
    root, history = await started()
    with within(10, "the trigger"):
        await db.execute(REFUSE).wait()
    files = TomlObjects(root.subdir("beads"), "bead", db, history)
    kept = []
    with collecting() as saving:  # as the server does around the write that makes a bead
        files.write("b1", {"title": "x"}, new=True, message="b1: new", settled=kept.append)
    try:
        with within(10, "the write's answer"):
            await on_disk(saving, "the write").wait()
        answer = "ok"
    except AnvilError as exc:
        answer = exc.message
    assert kept == [None], "the change is not kept: then its EIO would be right"
    assert (root.subdir("beads").read("b1.toml") or b"") != b""
    assert answer == "ok", f"the change stands (memory, file, git as recovered) but the client was told: {answer}"
