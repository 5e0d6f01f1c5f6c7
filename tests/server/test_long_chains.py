"""A server holding a dependency chain longer than Python's recursion limit starts again (issue 32, item 1).

The issue's reproduction through a real `anvilfs serve`: 1,100 beads, each depending on the one made
before, with titles counting down so that ids sort from the deepest dependent; stop; start. The walk at
load (the cycle check) once recursed per link: RecursionError, and the server exited.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from anvilfs.client import ConnectionLost
from anvilfs.ninep import consts as c
from harness.server import start_server

LINKS = 1100


def test_a_server_with_a_chain_of_1100_beads_starts_again_and_shows_it():
    base = Path(tempfile.mkdtemp(prefix="anvil."))
    try:
        srv = start_server(base)
        try:
            with srv.connect() as client:
                fid = client.open("beads/ctl", c.ORDWR)
                made: list[str] = []
                for i in range(LINKS):
                    after = f" {made[-1]}" if made else ""
                    client.write_chunk(fid, 0, f'new "c{9999 - i} step" builder "link {i}"{after}\n'.encode())
                    made.append(client.read_chunk(fid, 0).decode().strip())
                client.clunk(fid)
            assert sorted(made)[0] == made[-1], "the ids must sort from the deepest dependent"
        finally:
            assert srv.stop() == 0, srv.trace_tail()
        again = start_server(base, trace=False, log_name="again.log")
        try:
            try:
                with again.connect() as client:
                    graph = client.read_file("beads/graph").decode()
                    ready = client.read_file("beads/ready").decode()
                    errors = client.read_file("errors").decode()
            except ConnectionLost:
                again.stop()
                pytest.fail(f"the server did not stay up: {again.trace()[-3000:]}")
        finally:
            again.stop()
        assert graph.count("wave ") == LINKS, graph[-2000:]
        assert graph.splitlines()[-1] == f"  {made[-1]} pending  c{9999 - LINKS + 1} step  <- {made[-2]}"
        assert ready == f"{made[0]} pending builder - c9999 step\n"
        assert "cycle" not in errors and "Recursion" not in errors, errors
    finally:
        shutil.rmtree(base, ignore_errors=True)
