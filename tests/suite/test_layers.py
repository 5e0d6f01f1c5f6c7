"""The import direction of the layers (docs/design.md, "The layers"), checked on the source.

    ninep (no I/O, no trio)  <-  server  ->  tree  <-  fs  ->  sessions
    ninep  <-  client (blocking sockets; nothing of the server, no trio)
    ninep, client  <-  aioclient (trio; nothing of the server)
    client, aioclient  <-  web (the browser view: the files only, like the conductor)
    client  <-  mcpserver (`anvilfs mcp`, an agent's tools: the files only)

and, in a real client process, what the client commands load: a shell loop
or an agent's hook pays for every module, once per call.
"""

from __future__ import annotations

import ast
import importlib
import json
import pathlib
import subprocess
import sys

import pytest

import anvilfs
from harness.server import AnvilServer

PACKAGE = pathlib.Path(anvilfs.__file__).parent

# package -> the anvilfs packages and third-party modules it must not import
FORBIDDEN = {
    "ninep": {"server", "tree", "fs", "sessions", "client", "app", "trio"},
    "tree": {"ninep", "server", "fs", "sessions", "client", "app"},
    "sessions": {"ninep", "server", "tree", "fs", "client", "app", "backends"},
    "backends": {"ninep", "server", "tree", "fs", "client", "app"},
    "config": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "backends", "trio"},
    "fs": {"ninep", "server", "client"},
    "client": {"server", "tree", "fs", "sessions", "backends", "config", "app", "trio", "httpx", "pydantic", "tomlkit"},
    "aioclient": {"server", "tree", "fs", "sessions", "backends", "config", "app", "httpx", "pydantic", "tomlkit"},
    "boundedjson.py": {"ninep", "server", "tree", "fs", "sessions", "backends", "config", "client", "app", "trio", "errors",
                       "mail", "web"},  # the mail and the web share it: it depends on neither
    # the texts an agent's hook shares with the server (sessions/turns.py): `anvilfs hook` loads it
    "hookwords.py": {"ninep", "server", "tree", "fs", "sessions", "backends", "config", "client", "app", "trio",
                     "errors", "journal", "mail", "beads", "storage"},
    "places.py": {"ninep", "server", "tree", "fs", "sessions", "backends", "config", "client", "app", "trio"},
    "mail": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "beads", "backends"},
    "beads": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "mail", "backends"},
    # the git engine of worktree sessions (issue 31): plain records in and out, the wiring is app's and fs's
    "worktrees": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "beads", "mail", "backends", "config"},
    "storage": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "beads", "mail", "backends"},
    # worktree sessions' records and the merge queue: sessions and beads known by name only, wired by teamwork.py
    "workspaces": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "beads", "mail", "backends", "config"},
    "teamwork.py": {"ninep", "server", "tree", "fs", "client", "app", "backends", "config"},
    # what agents spend (issue 34): names only, wired by spending.py; sessions report into it, not it into them
    "usage": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "beads", "mail", "backends", "config",
              "storage", "trio"},
    "spending.py": {"ninep", "server", "tree", "fs", "client", "app", "backends", "config"},
    # `anvilfs mcp`: a client of the tree like web, with the MCP SDK (imported by that command alone)
    "mcpserver": {"server", "tree", "fs", "sessions", "backends", "config", "app", "beads", "mail", "storage", "trio",
                  "journal", "domain_events", "roles", "service", "waitable", "errors", "httpx", "tomlkit"},
    "brief.py": {"ninep", "server", "tree", "fs", "sessions", "backends", "config", "client", "app", "trio"},
    "web": {"ninep", "server", "tree", "fs", "sessions", "backends", "config", "app", "beads", "mail", "storage",
            "journal", "domain_events", "roles", "service", "waitable", "errors", "places", "httpx", "pydantic",
            "tomlkit"},
}


def imported_names(path: pathlib.Path) -> set[str]:
    """First component below anvilfs of each anvilfs import, and top-level third-party names."""
    tree = ast.parse(path.read_text(), str(path))
    depth = len(path.relative_to(PACKAGE).parts) - 1  # how deep below anvilfs/
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                names.add(parts[1] if parts[0] == "anvilfs" and len(parts) > 1 else parts[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                names.add(parts[1] if parts[0] == "anvilfs" and len(parts) > 1 else parts[0])
            else:
                up = node.level - 1  # levels above the module's own package
                if up < depth:
                    continue  # an import inside the same package
                target = (node.module or "").split(".")[0] if up == depth else None
                names.update({target} if target else {a.name for a in node.names})
    return names


def sources(name: str) -> list[pathlib.Path]:
    path = PACKAGE / name
    return [path] if path.is_file() else sorted(path.rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports_point_the_right_way(package):
    for path in sources(package):
        bad = imported_names(path) & FORBIDDEN[package]
        assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"


CONDUCTOR = PACKAGE.parent / "conductor"
CONDUCTOR_MAY_USE = {"client", "aioclient", "ninep"}  # the files only: it could run on another machine
# but its journal keeps the conductor's own record (on its own disk, never the server's state) with the
# storage module the server saves through (issue 33, "the same module"): one way to reach the disk, not two
CONDUCTOR_MODULE_MAY_ALSO_USE = {"journal.py": {"storage"}}


def anvilfs_imports(path: pathlib.Path) -> set[str]:
    """The anvilfs packages a module outside anvilfs imports (anvilfs.X -> X; bare `import anvilfs` -> '')."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        for module in modules:
            parts = module.split(".")
            if parts[0] == "anvilfs":
                names.add(parts[1] if len(parts) > 1 else "")
    return names


@pytest.mark.parametrize("path", sorted(CONDUCTOR.rglob("*.py")), ids=lambda p: p.name)
def test_the_conductor_uses_only_the_clients(path):
    bad = anvilfs_imports(path) - CONDUCTOR_MAY_USE - CONDUCTOR_MODULE_MAY_ALSO_USE.get(path.name, set())
    assert not bad, f"conductor/{path.name} imports anvilfs {sorted(bad)}: use the tree's files through a client"


def test_the_conductor_checker_sees_imports(tmp_path):
    assert "aioclient" in anvilfs_imports(CONDUCTOR / "ninetree.py")
    bad = tmp_path / "bad.py"
    bad.write_text("import anvilfs.sessions\nfrom anvilfs.server import serve\n")
    assert anvilfs_imports(bad) == {"sessions", "server"}


def test_the_checker_sees_imports():
    assert "trio" in imported_names(PACKAGE / "server" / "connection.py")
    assert "ninep" in imported_names(PACKAGE / "server" / "connection.py")
    assert "errors" in imported_names(PACKAGE / "tree" / "ctl.py")


@pytest.mark.parametrize("module", ["anvilfs.ninep", "anvilfs.tree", "anvilfs.sessions", "anvilfs.server", "anvilfs.client",
                                    "anvilfs.aioclient"])
def test_public_api_is_sorted_and_importable(module):
    mod = importlib.import_module(module)
    assert mod.__all__ == sorted(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), name


# --- what a client process loads --------------------------------------------------------

HEAVY = ("trio", "httpx", "pydantic", "tomlkit", "anvilfs.server", "anvilfs.backends", "anvilfs.sessions",
         "anvilfs.tree", "anvilfs.fs", "anvilfs.config", "anvilfs.app", "anvilfs.aioclient", "anvilfs.web", "starlette",
         "hypercorn")
# Only a 9P2000.L peer or a trace needs these (anvilfs/ninep/messages/__init__.py).
UNUSED_BY_A_9P2000_CLIENT = ("anvilfs.ninep.messages.dotl", "anvilfs.ninep.text")

RUN_AND_REPORT = """
import json, sys
{prelude}
from anvilfs.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as exc:  # --help
    status = exc.code
sys.stdout.flush()
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def run_and_report(srv: AnvilServer, *args: str, input: str = "", prelude: str = "") -> set[str]:
    """Run one client command in a fresh interpreter; the modules it had loaded at the end."""
    code = RUN_AND_REPORT.replace("{prelude}", prelude)
    r = subprocess.run([sys.executable, "-c", code, *args], input=input, capture_output=True,
                       text=True, env=srv.env(), timeout=30)
    report = json.loads(r.stderr.splitlines()[-1])
    assert report["status"] == 0, (args, r.stdout, r.stderr)
    return set(report["modules"])


def loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_client_commands_load_nothing_of_the_server(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    commands = [
        (("write", "agent/ctl", "new sim /tmp name=bot1"), ""),
        (("read", "agent/list"), ""),
        (("ls", "-l", "agent"), ""),
        (("stat", "agent/bot1/status"), ""),
        (("rdwr", "agent/ctl"), "new sim /tmp name=bot2\n"),
        (("top", "--once"), ""),
        (("--help",), ""),
        (("web", "--help"), ""),
    ]
    for args, input in commands:
        modules = run_and_report(srv, *args, input=input)
        assert "anvilfs.client" in modules or args == ("--help",), "the check must see the client's modules"
        assert not loaded(modules, HEAVY), f"anvilfs {' '.join(args)} loaded {loaded(modules, HEAVY)}"
        assert not loaded(modules, UNUSED_BY_A_9P2000_CLIENT), (args, loaded(modules, UNUSED_BY_A_9P2000_CLIENT))


def test_the_checker_sees_a_heavy_import(anvil_server: AnvilServer) -> None:
    # what the old cli.py did at its top
    modules = run_and_report(anvil_server, "read", "agent/list", prelude="import anvilfs.server")
    assert {"trio", "anvilfs.server", "anvilfs.backends", "pydantic"} <= set(loaded(modules, HEAVY))


DECODE_A_DOTL_MESSAGE_FIRST = """
import struct, sys
from anvilfs.ninep import Dialect, decode, encode
assert "anvilfs.ninep.messages.dotl" not in sys.modules
frame = struct.pack("<IBHII", 15, 12, 1, 7, 0)  # Tlopen tag 1 fid 7 flags 0, before any .L class exists
msg = decode(frame, Dialect.P2000L)
assert type(msg).__name__ == "Tlopen" and (msg.tag, msg.fid, msg.flags) == (1, 7, 0), msg
assert encode(msg, Dialect.P2000L) == frame
from anvilfs.ninep import messages as m
assert m.Tlopen is type(msg) and 12 in m.DOTL_ONLY and m.MESSAGE_TYPES[12] is m.Tlopen
print("ok")
"""


def test_a_9p2000L_message_decodes_before_its_class_is_made() -> None:
    r = subprocess.run([sys.executable, "-c", DECODE_A_DOTL_MESSAGE_FIRST], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout) == (0, "ok\n"), r.stderr


def test_a_server_loads_httpx_only_for_an_openai_agent() -> None:
    """Every restart pays for what `serve` imports; httpx (0.15 s) serves one backend kind, when configured."""
    code = ("import sys; import anvilfs.server.serve, anvilfs.app; print('httpx' in sys.modules);"
            "from anvilfs.backends import OpenAIAgent; print('httpx' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["False", "True"], (r.stdout, r.stderr)
