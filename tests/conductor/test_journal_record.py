"""The conductor's record in its database: each record on disk before it counts, in order, lanes sharing
commits; the lock; a record of the format before imported once, a kill in the middle of it included."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from conductor import crash
from conductor.journal import Journal, JournalError, read_record
from harness.deadlines import within
from harness.server import REPO_ROOT

# Made by the conductor of 0dec9af (the format before the database), with its own Journal: a bead step,
# a prompt step whose "done" rode lazily with the next begin, a halt; opened again (the log replayed into
# a new snapshot), a lazy finish, a begin, an interrupt, and the torn first half of a line a kill cut.
OLD_RECORD = Path(__file__).parent / "old_record"
PROMPT = "[conductor review run r1 lane dev round 2 step ask]\nask"
IMPORTED = {
    "version": 1, "name": "review", "digest": "digest-1", "run": "r1", "backends": {"dev": "sim"}, "override": [],
    "finished": None, "halted": {"outcome": "interrupted", "why": "interrupt from the ctl"},
    "done": {"make": "bd-1", "fix@1": {"targets": ["dev"]}, "done@1": True, "verdict@1": "again",
             "fix@2": {"targets": ["dev"]}},
    "pending": {"ask[dev]@2": {"targets": ["dev"], "text": PROMPT}},
}


def commits(rec: Journal) -> int:
    return rec._store.db.commits


async def test_begins_that_come_together_share_commits(tmp_path):
    rec = Journal.open(tmp_path, "wf", "digest")
    before = commits(rec)
    with within(30, "twenty begins to be on disk"):
        async with trio.open_nursery() as nursery:
            for lane in range(20):  # twenty lanes' prompts at once
                nursery.start_soon(rec.begin, f"ask[s{lane}]@1", {"text": f"prompt {lane}"})
    assert 1 <= commits(rec) - before < 20, f"{commits(rec) - before} commits for 20 records"
    rec.finish("ask[s0]@1", {"targets": ["s0"]})  # in the loop, after them
    rec.close()
    again = read_record(tmp_path, "wf")
    assert sorted(again["pending"]) == sorted(f"ask[s{lane}]@1" for lane in range(1, 20))
    assert again["done"] == {"ask[s0]@1": {"targets": ["s0"]}}


async def test_the_loop_serves_other_lanes_while_a_begin_is_committed(tmp_path, monkeypatch):
    rec = Journal.open(tmp_path, "wf", "digest")
    monkeypatch.setattr(crash, "_held", 0.5)  # the begin held in the writer thread, before its commit
    served = []

    async def other_lane(begun: trio.Event) -> None:
        await begun.wait()
        served.append(read_record(tmp_path, "wf")["pending"])  # the loop runs while the record is on its way

    with within(30, "a held begin"):
        async with trio.open_nursery() as nursery:
            begun = trio.Event()
            nursery.start_soon(other_lane, begun)
            nursery.start_soon(rec.begin, "ask@1", {"text": "prompt"})
            await trio.testing.wait_all_tasks_blocked()
            begun.set()
    rec.close()
    assert served == [{}] and read_record(tmp_path, "wf")["pending"] == {"ask@1": {"text": "prompt"}}


async def test_a_record_written_now_goes_after_those_on_their_way(tmp_path):
    rec = Journal.open(tmp_path, "wf", "digest")
    with within(30, "the begins"):
        async with trio.open_nursery() as nursery:
            for n in range(5):
                nursery.start_soon(rec.begin, f"bead{n}", {"title": f"bead {n}"})
            await trio.testing.wait_all_tasks_blocked()  # the begins queued (or committing)
            rec.finish("bead4", "bd-4")  # waits for them, then its own: the bead is done, not begun
    rec.close()
    record = read_record(tmp_path, "wf")
    assert record["done"] == {"bead4": "bd-4"} and sorted(record["pending"]) == ["bead0", "bead1", "bead2", "bead3"]


async def test_a_cancelled_begin_is_still_recorded(tmp_path):
    rec = Journal.open(tmp_path, "wf", "digest")
    with trio.CancelScope() as scope:
        scope.cancel()
        await rec.begin("ask@1", {"text": "prompt"})
    rec.close()  # what was queued is committed before the lock goes
    assert read_record(tmp_path, "wf")["pending"] == {"ask@1": {"text": "prompt"}}


async def test_a_lazy_finish_goes_to_disk_with_the_next_record_and_costs_no_commit(tmp_path):
    rec = Journal.open(tmp_path, "wf", "digest")
    with within(30, "a begin"):
        await rec.begin("ask@1", {"text": "prompt"})
    before = commits(rec)
    rec.finish("ask@1", {"targets": ["s"]}, lazy=True)
    rec.finish("wait@1", lazy=True)
    assert read_record(tmp_path, "wf")["done"] == {} and commits(rec) == before  # not on disk: nothing acted since
    with within(30, "a begin"):
        await rec.begin("ask@2", {"text": "again"})
    record = read_record(tmp_path, "wf")
    assert record["done"] == {"ask@1": {"targets": ["s"]}, "wait@1": True} and list(record["pending"]) == ["ask@2"]
    assert commits(rec) == before + 1
    rec.close()


def test_a_second_conductor_of_the_same_name_is_refused(tmp_path):
    rec = Journal.open(tmp_path, "wf", "digest")
    try:
        with pytest.raises(JournalError, match="another conductor named 'wf' is running"):
            Journal.open(tmp_path, "wf", "digest")
        Journal.open(tmp_path, "other", "digest").close()  # another name is another record
    finally:
        rec.close()
    Journal.open(tmp_path, "wf", "digest").close()  # the lock went with the first


def test_halt_resume_again_and_another_version(tmp_path):
    rec = Journal.open(tmp_path, "wf", "d1", run="r1")
    rec.finish("make", "bd-1")
    rec.halt("stopped", "stop from the ctl")
    rec.close()
    assert read_record(tmp_path, "wf")["halted"] == {"outcome": "stopped", "why": "stop from the ctl"}
    rec = Journal.open(tmp_path, "wf", "d1")
    assert (rec.resumed, rec.run, rec.resumed_from["outcome"], rec.done("make")) == (True, "r1", "stopped", "bd-1")
    rec.end("done", "all steps done")
    rec.close()
    assert "halted" not in read_record(tmp_path, "wf")  # the resumed run took it away
    with pytest.raises(JournalError, match="another version of the workflow file"):
        Journal.open(tmp_path, "wf", "d2")
    rec = Journal.open(tmp_path, "wf", "d1", again=True, run="r2")  # a new run over the finished one
    assert (rec.resumed, rec.replaced_run, rec.finished, rec.is_done("make")) == (False, "r1", None, False)
    rec.close()
    record = read_record(tmp_path, "wf")
    assert (record["run"], record["done"], record["finished"]) == ("r2", {}, None)


def old_state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    for file in OLD_RECORD.iterdir():
        shutil.copy(file, state / file.name)
    return state


def test_a_record_of_the_format_before_is_imported_once(tmp_path):
    state = old_state(tmp_path)
    assert read_record(state, "review") == IMPORTED | {"log": "review.111dd649.log"}  # read where it is, first
    rec = Journal.open(state, "review", "digest-1", backends={"dev": "sim"}, override=[])
    assert (rec.resumed, rec.run, rec.resumed_from) == (True, "r1", IMPORTED["halted"])
    assert rec.pending("ask[dev]@2") == {"targets": ["dev"], "text": PROMPT} and rec.done("make") == "bd-1"
    rec.close()
    assert sorted(os.listdir(state)) == ["review.db", "review.lock"]  # one-way: the old files are gone
    assert read_record(state, "review") == {k: v for k, v in IMPORTED.items() if k != "halted"}


def test_a_conductor_killed_in_the_middle_of_the_import_leaves_it_to_be_done_again(tmp_path):
    state = old_state(tmp_path)
    # killed once the import is committed and before the old files are removed (its first crash point)
    code = ("from pathlib import Path; from conductor.journal import Journal; "
            f"Journal.open(Path({str(state)!r}), 'review', 'digest-1', backends={{'dev': 'sim'}}, override=[])")
    killed = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                            env=os.environ | {"ANVILFS_CONDUCTOR_CRASH_AT": "1"})
    assert killed.returncode == -signal.SIGKILL and "(import: committed): SIGKILL" in killed.stderr, killed.stderr
    assert {"review.json", "review.111dd649.log", "review.db"} <= set(os.listdir(state))
    assert read_record(state, "review") == IMPORTED  # the database has it all already
    rec = Journal.open(state, "review", "digest-1", backends={"dev": "sim"}, override=[])
    assert rec.resumed_from == IMPORTED["halted"] and rec.data["done"] == IMPORTED["done"]
    rec.close()
    assert sorted(os.listdir(state)) == ["review.db", "review.lock"]
    assert read_record(state, "review") == {k: v for k, v in IMPORTED.items() if k != "halted"}


def test_a_broken_old_record_is_refused_and_left_where_it_is(tmp_path):
    state = old_state(tmp_path)
    (state / "review.json").write_text("{not json")
    with pytest.raises(JournalError, match="review.json: cannot read the conductor's record"):
        Journal.open(state, "review", "digest-1")
    assert "review.json" in os.listdir(state)
    with pytest.raises(JournalError, match="review.json: cannot read"):  # not hidden by the empty database
        read_record(state, "review")
    with pytest.raises(JournalError, match="review.json: cannot read"):  # the lock went with the refusal
        Journal.open(state, "review", "digest-1")


def test_a_state_directory_others_can_use_is_refused_with_how_to_fix_it(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    with pytest.raises(JournalError, match=r"mode 0755.*chmod 700"):
        Journal.open(state, "wf", "digest")
    assert os.listdir(state) == []  # nothing written there, not even the lock


@pytest.mark.parametrize("name", ["a/b", "../x", ""])
def test_a_name_that_is_no_file_name_is_refused(tmp_path, name):
    with pytest.raises(JournalError, match="a conductor's name names its files in --state"):
        Journal.open(tmp_path, name, "digest")
