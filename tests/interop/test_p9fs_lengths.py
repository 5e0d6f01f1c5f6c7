"""p9fs (fsspec) reads a file as long as its stat says (issue 24): every snapshot file must say its length.

``fs.cat_file(path)`` and ``fs.open(path, "rb").read()`` ask ``fs.info`` (a
Tstat, or in 9P2000.L a Tgetattr) how long the file is and read that many
bytes; with the length 0 every file stat'ed before read as b"". Here a
session has had two turns (the second answer longer), a bead and a mail
message exist, all made with `anvilfs` on the host; p9fs, from its own venv,
reads them in each dialect, and what it gets must be what `anvilfs read`
(which reads to EOF) gets.
"""

from __future__ import annotations

import pytest

from harness import venvs
from harness.server import AnvilServer

pytestmark = pytest.mark.clients

MAIL = '{"to":"human","type":"QUERY_REQUEST","subject":"lengths","body":"how long is this — in bytes?"}'


def _cli(srv: AnvilServer, *args: str, input: str | None = None) -> str:
    result = srv.run_cli(*args, input=input)
    assert result.returncode == 0, f"anvilfs {' '.join(args)}: {result.stderr}\n{srv.trace_tail()}"
    return result.stdout


def _made(srv: AnvilServer) -> dict[str, str]:
    """Two turns of a sim session, a bead and a mail: each file p9fs will read, and its contents read to EOF."""
    _cli(srv, "write", "agent/ctl", "new sim /tmp name=lbot")
    for prompt in ("short\n", "a second prompt, whose first line the answer quotes: café ☕, longer\n"):
        _cli(srv, "write", "agent/lbot/in", input=prompt)
        assert _cli(srv, "read", "agent/lbot/wait") == "await\n"
    _cli(srv, "write", "agent/beads/ctl", 'new "Measure lengths" developer "a description — not ASCII"')
    bead = _cli(srv, "read", "agent/beads/list").split()[0]
    _cli(srv, "write", "agent/lbot/mail", input=MAIL)
    [message] = _cli(srv, "ls", "agent/human/inbox").split()
    paths = ["lbot/out", "lbot/status", "lbot/log", f"beads/{bead}/description", f"beads/{bead}/title",
             f"human/inbox/{message.rsplit('/', 1)[-1]}"]
    return {path: _cli(srv, "read", f"agent/{path}") for path in paths}


@pytest.mark.parametrize("dialect", ["9P2000", "9P2000.u", "9P2000.L"])
def test_p9fs_reads_whole_files_sized_by_their_stat(anvil_server: AnvilServer, dialect: str) -> None:
    files = _made(anvil_server)
    assert "café ☕" in files["lbot/out"] and "turn 2" in files["lbot/out"]
    ops = [{"op": op, "path": path} for path in files for op in ("fsspec_info", "fsspec_cat", "fsspec_read")]
    ops.append({"op": "fsspec_info", "path": "lbot/wait"})
    results, proc = venvs.run_driver("p9fs", ops, "--unix", str(anvil_server.socket), "--dialect", dialect)
    why = f"{results}\nstderr: {proc.stderr}\n{anvil_server.trace_tail()}"
    assert proc.returncode == 0 and len(results) == len(ops), why
    for op, result in zip(ops, results):
        assert result["ok"] is True, (op, result, why)
        if op["path"] == "lbot/wait":
            assert result["size"] == 0, result  # a blocking file: read it to EOF, its stat says 0
        elif op["op"] == "fsspec_info":
            assert (result["size"], result["type"]) == (len(files[op["path"]].encode()), "file"), (op, result)
        else:
            assert result["data"] == files[op["path"]], (op, result)
