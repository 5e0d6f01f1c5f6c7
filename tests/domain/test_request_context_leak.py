"""What a request collects to wait for (waitable.collecting) ends with the request.

A task started while a request is handled (a session's runner, started by the `new` written to ctl)
copies the request's context, and with it the list of changes the request's answer waits on: every change
that task makes for the rest of its life must not be added to that list (a list that grows for ever,
and an answer that waits for changes that are not its own).
"""

from __future__ import annotations

from anvilfs.waitable import collecting
from harness.apps import started, until


async def test_a_runner_started_by_a_request_does_not_add_its_changes_to_the_request(tmp_path):
    async with started(tmp_path / "state") as app:
        with collecting() as saving:  # as dispatch.write does around the write of `new` to ctl
            session = app.sessions.new("sim", str(tmp_path), name="a")
        made = len(saving)
        for n in range(3):
            turns = session.turn_count
            app.sessions.submit("a", f"prompt {n}", "tester")
            await until(lambda: session.turn_count > turns and not session.busy, "the turn to end")
        assert len(saving) == made, f"{len(saving) - made} changes of the runner joined the request that made it"
