"""The socket transport reads before it waits only while no other task is ready to run."""

from __future__ import annotations

import os

import trio
import trio.testing

from anvilfs.server import transport
from anvilfs.server.connection import Connection
from anvilfs.tree import Directory


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



def _as_receive_loop(watch: transport.PassWatch) -> trio.lowlevel.Task:
    """The calling task stands for a connection's receive loop."""
    task = trio.lowlevel.current_task()
    watch.loops.add(task)
    return task


async def test_a_pass_with_a_task_that_is_not_a_receive_loop_is_seen_as_one():
    watch = transport.pass_watch()
    assert watch is not None and transport.pass_watch() is watch  # one per run, installed once
    me = _as_receive_loop(watch)
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


async def test_tasks_woken_by_io_count_in_the_pass_they_wake_into():
    """The look comes after the I/O wait: a reader woken by its socket counts in the very pass it runs
    in, and a receive loop woken by its own socket alone leaves the pass to the loops."""
    watch = transport.pass_watch()
    me = _as_receive_loop(watch)
    x, x_peer = trio.socket.socketpair()
    y, y_peer = trio.socket.socketpair()
    with x, x_peer, y, y_peer:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.lowlevel.wait_readable, x)  # a task that is not a receive loop
                await trio.testing.wait_all_tasks_blocked()
                os.write(x_peer.fileno(), b"for the other task")  # no checkpoint in between
                os.write(y_peer.fileno(), b"for this loop")
                await trio.lowlevel.wait_readable(y)  # one I/O wait wakes both
                assert watch.others
            assert await y.recv(100) == b"for this loop"
            await trio.testing.wait_all_tasks_blocked()
            os.write(y_peer.fileno(), b"again")
            await trio.lowlevel.wait_readable(y)
            assert not watch.others
        finally:
            watch.loops.discard(me)


def test_each_trio_run_has_its_own_watch():
    async def watch_of_this_run() -> transport.PassWatch:
        watch = transport.pass_watch()
        me = _as_receive_loop(watch)
        event = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(event.wait)
            await trio.testing.wait_all_tasks_blocked()
            event.set()
            await trio.lowlevel.checkpoint()
            assert watch.others  # the instrument is in this run
        watch.loops.discard(me)
        return watch

    assert trio.run(watch_of_this_run) is not trio.run(watch_of_this_run)
    assert transport.pass_watch() is None  # outside a run there is nothing to watch


async def test_a_socket_transport_reads_ahead_only_in_a_pass_of_receive_loops():
    a, b = trio.socket.socketpair()
    with a, b:
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
        io.loop_ended()
        assert trio.lowlevel.current_task() not in watch.loops


async def test_a_connection_is_a_receive_loop_while_it_reads_and_not_after():
    watch = transport.pass_watch()
    a, b = trio.socket.socketpair()
    with b:
        conn = Connection(trio.SocketStream(a), Directory("agent", "root"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(conn.serve)
            await trio.testing.wait_all_tasks_blocked()
            assert len(watch.loops) == 1  # the task serving it
            b.close()  # the client hangs up: the loop ends
        assert not watch.loops
