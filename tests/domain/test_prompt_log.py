"""The prompt log: answered prompts stay on disk while their session's .toml catches up, across crashes.

A crash is the state directory copied at the instant a prompt's write is
answered (what SIGKILL leaves: the save queue has not run), then an App
started on the copy.
"""

from __future__ import annotations

import json
import shutil
import tomllib

import trio

from anvilfs.sessions import RestartPolicy, State
from anvilfs.storage import AppendLog, PrivateDir
from harness.apps import started, until


def restarted(state):
    """The app started on a copy: paused, so each session's queue stays as the restart found it (a
    per-turn session would otherwise run it at once, SPEC §5)."""
    return started(state, paused=True)


async def _copied_at_the_answer(tmp_path, text: str, meanwhile=lambda app, session: None):
    """The state directory as a SIGKILL at a prompt's answer leaves it: `bot1` runs a turn, `text` is
    prompted (`meanwhile(app, session)` runs in the same tick), and the directory is copied to
    tmp_path/crashed in the tick the prompt's write is answered, before the save queue runs."""
    async with started(tmp_path / "state") as first:
        s = first.sessions.new("sim", "/tmp", name="bot1")
        first.sessions.submit("bot1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
        answer = first.sessions.submit("bot1", text, "glenda")
        meanwhile(first, s)
        await answer.wait()
        shutil.copytree(tmp_path / "state", tmp_path / "crashed")
    return tmp_path / "crashed"


async def test_a_prompt_answered_before_its_toml_caught_up_is_queued_again_once_after_a_crash(autojump_clock, tmp_path):
    """The state directory copied at the instant the prompt's write is answered is what a SIGKILL leaves:
    the prompt log has the prompt and the .toml does not. A restart queues it from the log, saves it in
    the .toml, deletes the log it read; a second restart has it once, and a record of another session
    of the same name (removed, then made again) is never applied."""
    crashed = await _copied_at_the_answer(tmp_path, "answered, then the server died")
    assert "answered, then" not in (crashed / "sessions" / "bot1.toml").read_text()
    stranger = AppendLog(PrivateDir(crashed / "prompts"))
    stranger.add(json.dumps({"session": "bot1", "conversation": "another", "seq": 9, "sender": "x", "at": "",
                             "text": "for a session gone"}).encode())
    stranger.flush()
    stranger.close()
    for restart in (1, 2):
        async with restarted(crashed) as app:
            r = app.sessions.get("bot1")
            assert [p.text for p in r.queue] == ["answered, then the server died"], f"restart {restart}"
            assert ("prompts queued again from the prompt log" in app.events.text()) == (restart == 1)
            assert r.prompt_seq == 2
        assert "answered, then the server died" in (crashed / "sessions" / "bot1.toml").read_text()
        assert PrivateDir(crashed / "prompts").names(".wal") == [], "the log read at the start is deleted"


async def test_a_toml_saved_while_a_prompt_is_on_its_way_does_not_claim_it(autojump_clock, tmp_path):
    """The .toml's `prompts` stops before the first prompt still on its way to the log: a save at once
    then (a hook, a ctl command), followed by a crash at the prompt's answer, leaves it to the log."""
    # the save at once comes while the prompt is incoming, not yet in the log
    crashed = await _copied_at_the_answer(tmp_path, "on its way", lambda app, s: app.sessions.saver.save_now(s))
    async with restarted(crashed) as app:
        assert [p.text for p in app.sessions.get("bot1").queue] == ["on its way"]


async def test_the_prompts_a_restart_queued_from_the_log_are_saved_before_the_log_goes(autojump_clock, tmp_path):
    await _copied_at_the_answer(tmp_path, "answered")
    async with restarted(tmp_path / "crashed"):  # restarted, and killed as soon as it has started
        shutil.copytree(tmp_path / "crashed", tmp_path / "again")
    async with restarted(tmp_path / "again") as third:
        assert [p.text for p in third.sessions.get("bot1").queue] == ["answered"]


async def test_a_restart_of_a_running_session_never_leaves_it_saved_stopped_without_its_queue(
        autojump_clock, tmp_path):
    async with started(tmp_path / "state") as app:
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
        await app.sessions.submit("bot1", "queued", "glenda").wait()
        await until(lambda: "queued" in (tmp_path / "state" / "sessions" / "bot1.toml").read_text())
        app.sessions.restart("bot1")
        shutil.copytree(tmp_path / "state", tmp_path / "crashed")  # a crash right after the restart
    async with restarted(tmp_path / "crashed") as again:
        r = again.sessions.get("bot1")
        assert r.state is not State.STOPPED and [p.text for p in r.queue] == ["queued"]


async def test_a_session_removed_while_a_prompt_is_on_its_way_stays_removed(autojump_clock, tmp_path):
    """The prompt lands after the remove: it must not write the removed session's .toml back, nor over
    the .toml of a new session of the same name."""
    async with started(tmp_path, restart=RestartPolicy(enabled=False)) as app:
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:exit", "glenda")
        await until(lambda: s.state is State.EXITED)
        late = app.sessions.submit("bot1", "late", "glenda")  # an exited session takes prompts
        app.sessions.remove("bot1")  # in the same tick: the prompt is still on its way
        await late.wait()
        await trio.sleep(5)  # the save queue has written whatever it was going to
        assert not (tmp_path / "sessions" / "bot1.toml").exists(), "the removed session's .toml is back"
        new = app.sessions.new("sim", "/tmp", name="bot1")
        await until(lambda: new.state is State.IDLE)
    async with started(tmp_path) as app:
        [restored] = app.sessions.all()
        assert restored.definition.conversation == new.definition.conversation and not restored.queue


async def test_at_every_answer_each_answered_prompt_is_on_disk_while_log_segments_come_and_go(
        autojump_clock, tmp_path):
    """Small segments of the prompt log fill up and are deleted once the .tomls pending then are on
    disk; the state directory copied at each prompt's answer, restarted, has every prompt answered."""
    async with started(tmp_path / "state") as app:
        app.sessions.saver.prompts.segment_bytes = 250  # a segment holds about one prompt
        s = app.sessions.new("sim", "/tmp", name="bot1")
        app.sessions.submit("bot1", "sim:hang", "glenda")
        await until(lambda: s.state is State.RUNNING)
        for i in range(6):
            await app.sessions.submit("bot1", f"prompt {i} " + "x" * 100, "glenda").wait()
            shutil.copytree(tmp_path / "state", tmp_path / f"at{i}")
            await trio.sleep(0.5)  # the .toml, and the deletion of full segments, in between
        segments = (tmp_path / "state" / "prompts").iterdir()
    assert len(list(segments)) < 6, "full segments were deleted"
    for i in range(6):
        async with restarted(tmp_path / f"at{i}") as again:
            texts = [p.text.split()[1] for p in again.sessions.get("bot1").queue]
            assert texts == [str(k) for k in range(i + 1)], f"at the answer of prompt {i}"


async def test_a_prompt_answered_while_the_answer_before_it_cannot_be_written_is_in_the_prompt_log(
        autojump_clock, running, tmp_path):
    """The .toml never lands before the log it follows, so it cannot take the prompt that came after;
    the prompt log has it, and a restart then would queue it again (its seq is past the .toml's)."""
    app = await running(state_dir=tmp_path)
    s = app.sessions.new("sim", "/tmp", name="bot1")
    await until(lambda: s.state is State.IDLE)
    log = tmp_path / "sessions" / "bot1.log"
    log.unlink(missing_ok=True)
    log.mkdir()  # appends to the transcript fail from now on
    app.sessions.submit("bot1", "one", "glenda")
    await until(lambda: s.state is State.AWAIT)
    await app.sessions.submit("bot1", "two", "glenda").wait()  # answered: on disk in the prompt log
    saved = tomllib.loads((tmp_path / "sessions" / "bot1.toml").read_text())
    assert saved["status"]["turns"] <= 1 and all(p["text"] != "two" for p in saved.get("queue", []))
    records = [json.loads(r) for r in AppendLog(PrivateDir(tmp_path / "prompts")).records()[0]]
    assert [r["seq"] for r in records if r["text"] == "two"] == [2] and saved["status"]["prompts"] < 2
    log.rmdir()  # the disk is back: the transcript, then the .toml catch up
    await until(lambda: s.turn_count == 2 and s.state is State.AWAIT)
    await until(lambda: "--- answer 1" in log.read_text() if log.is_file() else False)
