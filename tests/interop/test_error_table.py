"""The error table over every client the suite has, each through its own main API (issue 10).

A row is a refused request (harness/error_cases.py CASES, one per error
kind), a column a client in one dialect; each cell is the errno that client
gives. Where the errno travels (9P2000.u's errno field, 9P2000.L's Rlerror)
the cell is the case's errno. Where only 9P2000's text travels, the cell is
the errno the text's keywords give by 9pfuse's table (anvilfs/ninep/errstr.py,
errors.KINDS), within plan9port's ERRMAX. Linux v9fs with version=9p2000 maps
only exact standard strings, so it gets ESERVERFAULT (SPEC §2, docs/using.md "Errors"):
the cell says so, to keep that documentation true. DEPARTURES lists, with
the reason, each cell where a client gives something else or cannot ask.

plan9port's `9p` and a 9pfuse mount have their columns in test_plan9port.py.
Each column is observed once for all rows: one driver process, one guest
boot per dialect, over one server (test_plan9port's `srv`: SETUP done,
prompts limited; refusals change nothing).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

import pytest

from anvilfs.ninep.errstr import ERRMAX, ninepfuse_errno
from harness.prerequisites import missing
from harness import venvs
from harness.error_cases import CASES, IDS, Case
from harness.server import AnvilServer
from harness.vm import GuestSetupError, run_in_guest, sections
from test_plan9port import srv  # noqa: F401, F811 - the module's server, a fixture its functions name

ESERVERFAULT = 526  # Linux's, not in Python's errno module: "Unknown error 526" to a process


@dataclass(frozen=True)
class Column:
    name: str
    carries: str  # "errno" | "text" (9pfuse's keywords) | "serverfault" (v9fs, version=9p2000)
    mark: str  # what it needs: "clients" (the client venvs) or "vm" (a QEMU guest); "" for neither
    departures: dict[str, int | None] = field(default_factory=dict)  # case -> errno instead; None: cannot ask

    def expected(self, case: Case) -> int | None:
        if case.name in self.departures:
            return self.departures[case.name]
        return {"errno": case.errno, "text": case.kind.ninepfuse_errno, "serverfault": ESERVERFAULT}[self.carries]


# Why a cell departs from its column's rule.
DEPARTURES = {
    # after a short Rwalk the project's client words the miss itself ("'x' does not exist")
    "anvilfs": {"past-a-file": errno.ENOENT},
    # the kernel knows `list` is a file and refuses `list/x` itself, before any 9P
    "v9fs-9p2000": {"past-a-file": errno.ENOTDIR},
}
COLUMNS = [
    Column("anvilfs", "text", ""),
    Column("python-9p", "text", "clients"),
    Column("p9fs-9P2000", "text", "clients"),
    Column("p9fs-9P2000.u", "errno", "clients"),
    Column("p9fs-9P2000.L", "errno", "clients"),
    Column("v9fs-9p2000.L", "errno", "vm"),
    Column("v9fs-9p2000.u", "errno", "vm"),
    Column("v9fs-9p2000", "serverfault", "vm"),
]
COLUMNS = [Column(c.name, c.carries, c.mark, DEPARTURES.get(c.name, {})) for c in COLUMNS]


@dataclass(frozen=True)
class Seen:
    """What a client gave for one case: an errno, or a text (then its 9pfuse errno), and the raw answer."""

    errno: int | None
    text: str = ""
    raw: object = None


# ------------------------------------------------------------ the project's client

def _anvilfs_column(srv: AnvilServer) -> dict[str, Seen]:
    seen = {}
    for case in CASES:
        r = srv.run_cli({"remove": "rm"}.get(case.op, case.op), f"agent/{case.path}", input=case.data)
        prefix = f"anvilfs: agent/{case.path}: "
        # the error's own line: a refused ctl line's usage follows on the next (commands.with_usage)
        text = r.stderr.split("\n")[0].removeprefix(prefix) if r.returncode == 1 else ""
        assert r.stderr.startswith(prefix), (case.name, r)
        seen[case.name] = Seen(ninepfuse_errno(text), text, r)
    return seen


# ------------------------------------------------------------ python-9p and p9fs, from their venvs

def _driver_column(srv: AnvilServer, client: str, dialect: str) -> dict[str, Seen]:
    args = ["--unix", str(srv.socket)] + (["--dialect", dialect] if client == "p9fs" else [])
    ops = [{"op": c.op, "path": c.path, "data": c.data, "stepwise": True} for c in CASES]
    try:
        results, proc = venvs.run_driver(client, ops, *args)
    except venvs.VenvError as exc:
        missing(f"no {client} venv: {exc}")
    assert proc.returncode == 0 and len(results) == len(CASES), (results, proc.stderr)
    seen = {}
    for case, r in zip(CASES, results):
        if r["ok"] or not r["remote"]:
            seen[case.name] = Seen(None, raw=r)
        elif dialect in ("9P2000.u", "9P2000.L"):
            seen[case.name] = Seen(r.get("errno"), raw=r)
        else:
            seen[case.name] = Seen(ninepfuse_errno(r["error"]), r["error"], r)
    return seen


# ------------------------------------------------------------ Linux v9fs in a guest

def _shell(case: Case) -> str:
    """The command, its error message on stdout (2>&1 before the redirection, so not into the file)."""
    path = case.path
    if case.op == "read":
        return f"cat {path} 2>&1"
    if case.op == "remove":
        return f"rm -f {path} 2>&1"
    text = case.data.removesuffix("\n")
    assert "'" not in text and "\n" not in text, case
    return f"echo {'' if case.data.endswith(chr(10)) else '-n '}'{text}' 2>&1 > {path}"


GUEST_SNIPPET = "\n".join(['step() { echo "@@ $1"; }']
                          + [f'step {c.name}; {_shell(c)}; echo "rc=$?"' for c in CASES] + ["step end"])


def _errno_in(lines: list[str]) -> int | None:
    """The errno whose strerror the guest's error message quotes (busybox prints it); the longest match."""
    text = "\n".join(lines)
    codes = [code for code in [*errno.errorcode, ESERVERFAULT] if os.strerror(code) in text]
    return max(codes, key=lambda code: len(os.strerror(code)), default=None)


def _v9fs_column(srv: AnvilServer, version: str) -> dict[str, Seen]:
    try:
        r = run_in_guest(srv.socket, GUEST_SNIPPET, version=version, timeout=120)
    except GuestSetupError as exc:
        missing(str(exc))
    assert r.mounted, f"{r}\n{srv.trace_tail()}"
    steps = sections(r.output)
    assert list(steps) == [*IDS, "end"], r.output  # every step ran: none hung or retried
    seen = {}
    for case in CASES:
        lines, rc = steps[case.name]
        seen[case.name] = Seen(_errno_in(lines) if rc else None, "\n".join(lines), (lines, rc))
    return seen


def _observe(column: Column, srv: AnvilServer) -> dict[str, Seen]:
    if column.name == "anvilfs":
        return _anvilfs_column(srv)
    if column.name == "python-9p":
        return _driver_column(srv, "python-9p", "9P2000")
    client, _, dialect = column.name.partition("-")
    if client == "v9fs":
        return _v9fs_column(srv, dialect)
    return _driver_column(srv, client, dialect)


@pytest.fixture(scope="module")
def table(srv):  # noqa: F811 - the imported fixture
    observed: dict[str, dict[str, Seen]] = {}

    def column_of(column: Column) -> dict[str, Seen]:
        if column.name not in observed:
            observed[column.name] = _observe(column, srv)
        return observed[column.name]

    return column_of


def _params():
    for column in COLUMNS:
        marks = [getattr(pytest.mark, column.mark)] if column.mark else []
        yield pytest.param(column, marks=marks, id=column.name)


def _cells():
    """Every (client, case) the client can send; a client that cannot has no cell (none today)."""
    for param in _params():
        column = param.values[0]
        for case in CASES:
            if column.expected(case) is not None:
                yield pytest.param(column, case, marks=param.marks, id=f"{case.name}-{column.name}")


@pytest.mark.parametrize(("column", "case"), list(_cells()))
def test_error_table(table, column: Column, case: Case):
    expected = column.expected(case)
    seen = table(column)[case.name]
    assert seen.errno == expected, (
        f"{case.name} via {column.name}: {errno.errorcode.get(seen.errno, seen.errno)}, "
        f"want {errno.errorcode.get(expected, expected)}; {seen.raw}")
    if column.carries == "text":
        assert len(seen.text.encode()) < ERRMAX, seen.text


def test_the_table_has_a_cell_for_every_case_and_column():
    # a departure names a case that exists, and every client can send every case
    names = set(IDS)
    for column in COLUMNS:
        assert set(column.departures) <= names, column
    assert [c.name for c in COLUMNS if None in c.departures.values()] == []
