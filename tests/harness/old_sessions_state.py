"""Makes the state directories of sessions that the importer's tests read (tests/fixtures/sessions-0dec9af/).

Run with the code of 0dec9af (the last one that kept sessions in files) first on the path:

    mkdir /tmp/old && git archive 0dec9af anvilfs | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old .venv/bin/python tests/harness/old_sessions_state.py tests/fixtures/sessions-0dec9af

It writes two state directories, each with `expected.json` beside it: what that old code's server, started
`--paused` on the directory, had (every session's definition, state, queue, out and transcript, times
masked). `stopped/` is left by a clean stop; `killed/` is the directory as it was at the instant a prompt's
write was answered (what a SIGKILL leaves: that prompt only in the prompt log, the last batches only in
the redo log). Both have a removed session in `removed/`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import trio
import trio.testing

from anvilfs.app import App
from anvilfs.sessions import RestartPolicy, State

TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def masked(text: str) -> str:
    """A transcript or detail with its times replaced: a restart adds lines stamped with its own time."""
    return TIMES.sub("TIME", text)


def dump(app: App) -> dict:
    """What a test compares after an import: each session as the server has it, times masked."""
    return {s.name: {"backend": s.definition.backend, "cwd": s.definition.cwd, "model": s.definition.model,
                     "notify": s.definition.notify, "conversation": s.definition.conversation,
                     "status": masked(s.status_line()), "turns": s.turn_count, "restarts": s.restarts,
                     "queue": [p.text for p in s.queue], "out": s.out, "log": masked(s.log_text())}
            for s in sorted(app.sessions.all(), key=lambda s: s.name)}


async def until(predicate) -> None:
    with trio.fail_after(60):
        while not predicate():
            await trio.sleep(0.01)


async def build(state: Path, copy_at_answer: Path | None) -> None:
    """The sessions of both directories; with `copy_at_answer`, the directory copied there as a last
    prompt's write is answered (before the save queue wrote its session's .toml)."""
    async with trio.open_nursery() as nursery:
        app = App(state_dir=state, restart=RestartPolicy(enabled=False))
        await nursery.start(app.run)
        s = app.sessions
        idle = s.new("sim", "/tmp", name="answered", model="m1", notify=True)
        s.submit("answered", "hello there", "glenda")
        await until(lambda: idle.state is State.AWAIT)
        exited = s.new("sim", "/tmp", name="exited1")
        s.submit("exited1", "sim:exit", "glenda")
        await until(lambda: exited.state is State.EXITED)
        await s.submit("exited1", "waits for a restart", "glenda").wait()
        gone = s.new("sim", "/tmp", name="gone")
        s.submit("gone", "said before its removal", "glenda")
        await until(lambda: gone.state is State.AWAIT)
        s.stop("gone")
        s.remove("gone")
        busy = s.new("sim", "/tmp", name="busy")
        s.submit("busy", "sim:hang", "glenda")
        await until(lambda: busy.state is State.RUNNING)
        await s.submit("busy", "queued behind the hang", "glenda").wait()
        await trio.sleep(2)  # the save queue wrote what it had
        last = s.submit("busy", "answered, then the server died", "glenda")
        await last.wait()
        if copy_at_answer is not None:
            shutil.copytree(state, copy_at_answer, ignore=shutil.ignore_patterns("anvilfs.db*"))
        nursery.cancel_scope.cancel()


async def expected(state: Path) -> dict:
    """What the old server had after a paused start on a copy of `state` (the copy is thrown away)."""
    scratch = state.parent / (state.name + ".scratch")
    shutil.copytree(state, scratch)
    try:
        async with trio.open_nursery() as nursery:
            app = App(state_dir=scratch, paused=True)
            await nursery.start(app.run)
            found = dump(app)
            nursery.cancel_scope.cancel()
    finally:
        shutil.rmtree(scratch)
    return found


async def main(out: Path) -> None:
    work = out / "work"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    await build(work, out / "killed")
    shutil.copytree(work, out / "stopped", ignore=shutil.ignore_patterns("anvilfs.db*"))
    shutil.rmtree(work)
    for name in ("killed", "stopped"):
        for extra in ("agents", ".git"):
            shutil.rmtree(out / name / extra, ignore_errors=True)
        (out / f"{name}.json").write_text(json.dumps(await expected(out / name), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]).resolve(), clock=trio.testing.MockClock(autojump_threshold=0))
