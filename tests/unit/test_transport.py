"""The socket transport reads before it waits only while no other task is ready to run."""

from __future__ import annotations

import trio

from anvilfs.server import transport


async def test_it_sees_a_task_ready_to_run_through_trios_run_queue():
    assert transport._RUN_CONTEXT is not None, "trio moved GLOBAL_RUN_CONTEXT: the slow public fallback is in use"
    await trio.testing.wait_all_tasks_blocked()  # whatever the test runner started has run
    assert not transport._others_ready()
    event = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(event.wait)
        assert transport._others_ready()  # the new task waits for its first run
        await trio.testing.wait_all_tasks_blocked()
        assert not transport._others_ready()
        event.set()
        assert transport._others_ready()  # woken: ready to run, not yet run
