"""Marks along a conductor's reaction, for benchmarks/conductor.py --trace (never imported otherwise).

Python imports a sitecustomize found on PYTHONPATH at start-up; conductor.py
puts this directory there, and ANVILFS_TRACE_DIR in the environment, for the
server and the conductor it starts. Each process then records
time.monotonic() (one clock for every process of the machine) at:

    server     `SESSION await` appended to events     (the turn ended)
               Sessions.submit(SESSION, ...)           (the prompt's clunk arrived)
               `SESSION prompt queued` appended        (its record is on disk)
    conductor  Access.state(SESSION) returns           (its `wait` read was answered)
               Access.deliver(SESSION, ...) begins     (its own record is on disk)

and writes them to ANVILFS_TRACE_DIR/{server,conductor}.PID.json at exit.
The wrappers cost a few microseconds a mark.
"""

import atexit
import json
import os
import sys
import time

_DIR = os.environ.get("ANVILFS_TRACE_DIR")
_marks: list = []


def _mark(kind: str, who: str) -> None:
    _marks.append((time.monotonic(), kind, who))


def _dump(name: str) -> None:
    with open(os.path.join(_DIR, f"{name}.{os.getpid()}.json"), "w") as f:
        json.dump(_marks, f)


def _trace_server() -> None:
    import anvilfs.journal as journal
    import anvilfs.sessions.manager as manager

    append, submit = journal.Journal.append, manager.Sessions.submit

    def traced_append(self, text):
        words = text.split()
        if words[1:2] == ["await"]:
            _mark("await", words[0])
        elif words[1:3] == ["prompt", "queued"]:
            _mark("queued", words[0])
        return append(self, text)

    def traced_submit(self, name, text, sender):
        _mark("submit", name)
        return submit(self, name, text, sender)

    journal.Journal.append, manager.Sessions.submit = traced_append, traced_submit
    atexit.register(_dump, "server")


def _trace_conductor() -> None:
    import conductor.access as access

    state, deliver = access.Access.state, access.Access.deliver

    async def traced_state(self, name):
        word = await state(self, name)
        _mark("woke", name)
        return word

    async def traced_deliver(self, target, text, line, *, uncertain):
        _mark("deliver", target)
        return await deliver(self, target, text, line, uncertain=uncertain)

    access.Access.state, access.Access.deliver = traced_state, traced_deliver
    atexit.register(_dump, "conductor")


if _DIR:
    if "serve" in sys.orig_argv:
        _trace_server()
    elif "conductor" in sys.orig_argv:
        _trace_conductor()
