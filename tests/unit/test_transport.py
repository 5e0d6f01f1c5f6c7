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


async def test_a_pass_with_a_task_that_is_not_a_receive_loop_is_seen_as_one():
    watch = transport.pass_watch()
    assert watch is not None and transport.pass_watch() is watch  # one per run, installed once
    me = trio.lowlevel.current_task()
    watch.loops.add(me)  # this test stands for a connection's receive loop
    try:
        event = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(event.wait)
            await trio.testing.wait_all_tasks_blocked()
            await trio.lowlevel.checkpoint()
            assert not watch.others  # a pass of receive loops alone
            event.set()  # the waiter is woken: it runs in the same pass as this task's next step
            await trio.lowlevel.checkpoint()
            assert watch.others
        await trio.testing.wait_all_tasks_blocked()
        await trio.lowlevel.checkpoint()
        assert not watch.others
    finally:
        watch.loops.discard(me)


async def test_a_socket_transport_reads_ahead_only_in_a_pass_of_receive_loops():
    a, b = trio.socket.socketpair()
    with b:
        io = transport.SocketTransport(trio.SocketStream(a))
        io.loop_began()
        watch = transport.pass_watch()
        assert trio.lowlevel.current_task() in watch.loops
        await b.send(b"request")
        await trio.testing.wait_all_tasks_blocked()
        watch.others = True  # as after_io_wait sets it when a woken reader waits in the pass
        assert io.receive_nowait() is None
        watch.others = False
        assert io.receive_nowait() == b"request"
        await io.aclose()
        assert trio.lowlevel.current_task() not in watch.loops  # a closed connection is forgotten
