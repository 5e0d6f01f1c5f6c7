"""How a backend with `mcp = true` starts its CLI: the seam of backends/agent_tools.py, through a real server.

The program is a stand-in named `claude` (a shell script that says it is
one): it answers with the arguments and environment it was started with,
so the test reads exactly what the real CLI would be given. The real CLIs
taking these and calling the tools are tests/agents/test_*_tools.py.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.server import start_server

STAND_IN = """#!/bin/sh
echo '[stand-in claude, not the real CLI]'
for word in "$@"; do printf 'arg %s\\n' "$word" | tr '\\n' ' '; echo; done
echo "path-head ${PATH%%:*}"
echo "conductor-env ${ANVILFS_CONDUCTOR:-none}"
cat >/dev/null
"""


def serve(base: Path, mcp: str):
    bin_dir = base / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "claude").write_text(STAND_IN)
    (bin_dir / "claude").chmod(0o755)
    config = base / "config.toml"
    config.write_text(f'[backends.standin]\nkind = "command"\nargv = [{json.dumps(str(bin_dir / "claude"))}, "-p"]\n'
                      + (f"mcp = {mcp}\n" if mcp else ""))
    return start_server(base, extra_args=["--config", str(config)], log_name=f"server.{os.getpid()}.trace")


def turn(srv, name: str) -> dict:
    srv.run_cli("write", f"agent/{name}/in", "hello")
    srv.run_cli("read", f"agent/{name}/wait")
    out = srv.run_cli("read", f"agent/{name}/out").stdout
    args = [line[4:].rstrip() for line in out.splitlines() if line.startswith("arg ")]
    found = dict(line.split(" ", 1) for line in out.splitlines() if line.startswith(("path-head", "conductor-env")))
    return {"args": args, **found}


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_cli_gets_the_server_the_allowed_tools_the_brief_and_the_path():
    with tempfile.TemporaryDirectory(prefix="anvil.") as base:
        srv = serve(Path(base), "true")
        try:
            srv.run_cli("write", "agent/ctl", f"new standin {base} name=bot1")
            srv.run_cli("write", "agent/ctl", f"new standin {base} name=lead conductor")
            bot, lead = turn(srv, "bot1"), turn(srv, "lead")
            shell_path = sorted(os.listdir(bot["path-head"])), os.path.realpath(Path(bot["path-head"]) / "anvilfs")
            srv.stop()
            srv = serve(Path(base), "true")  # the conductor flag is the session's, kept across a restart
            srv.run_cli("write", "agent/lead/ctl", "restart")
            again = turn(srv, "lead")
        finally:
            srv.stop()
    assert bot["args"][-1] == "-p", "the wiring goes right after the program, the argv's own words after it"
    config = json.loads(flag(bot["args"], "--mcp-config"))["mcpServers"]["anvilfs"]
    assert config["args"] == ["mcp"] and os.path.basename(config["command"]) == "anvilfs"
    assert config["env"]["ANVILFS_SESSION"] == "bot1" and config["env"]["ANVILFS_ADDRESS"].startswith("unix!")
    assert config["alwaysLoad"] is True
    allowed = flag(bot["args"], "--allowedTools").split(",")
    assert "mcp__anvilfs__claim" in allowed and "mcp__anvilfs__prompt" not in allowed
    assert "Bash(anvilfs write:*)" in allowed and not any("notify" in rule for rule in allowed)
    assert "You are the anvilfs session bot1" in flag(bot["args"], "--append-system-prompt")
    assert bot["path-head"].endswith("/state/agents/bot1/bin") and bot["conductor-env"] == "none"
    assert shell_path == (["anvilfs"], os.path.realpath(config["command"])), "the PATH's head holds anvilfs alone"
    for conductor in (lead, again):
        assert "mcp__anvilfs__prompt" in flag(conductor["args"], "--allowedTools").split(",")
        assert json.loads(flag(conductor["args"], "--mcp-config"))["mcpServers"]["anvilfs"]["env"]["ANVILFS_CONDUCTOR"] == "1"


def test_mcp_false_gives_nothing():
    with tempfile.TemporaryDirectory(prefix="anvil.") as base:
        srv = serve(Path(base), "false")
        try:
            srv.run_cli("write", "agent/ctl", f"new standin {base} name=bot1")
            seen = turn(srv, "bot1")
        finally:
            srv.stop()
    assert seen["args"] == ["-p"] and not seen["path-head"].endswith("/agents/bot1/bin")


def test_mcp_true_on_a_program_anvilfs_cannot_wire_is_refused_at_start():
    with tempfile.TemporaryDirectory(prefix="anvil.") as base:
        config = Path(base) / "config.toml"
        config.write_text('[backends.mine]\nkind = "command"\nargv = ["mybot"]\nmcp = true\n')
        run = subprocess.run([sys.executable, "-m", "anvilfs", "serve", "--config", str(config), "--namespace",
                              f"{base}/ns", "--state", f"{base}/state"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, shlex.join(run.args)
    assert "[backends.mine] mcp = true: anvilfs knows how to give its tools to claude, codex, gemini" in run.stderr


def test_an_agents_anvilfs_talks_to_its_own_server_only():
    """ANVILFS_PINNED (in every wired agent's environment): a shell rule allowing `anvilfs read` must not let the
    agent send a file to another host as a token (--token-file) or read another server."""
    env = os.environ | {"ANVILFS_PINNED": "1", "ANVILFS_ADDRESS": "unix!/nonexistent/agent"}
    own = subprocess.run([sys.executable, "-m", "anvilfs", "-a", "unix!/nonexistent/agent", "read", "list"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert "talks to its own server only" not in own.stderr, "its own address is its own (the tmux hook gives -a)"
    for extra in (["-a", "tcp!127.0.0.1!9"], ["-A", "x"], ["--token-file", "/etc/hostname"]):
        run = subprocess.run([sys.executable, "-m", "anvilfs", "read", *extra, "agent/list"], env=env,
                             capture_output=True, text=True, timeout=30)
        assert run.returncode == 1 and "talks to its own server only" in run.stderr, (extra, run.stderr)
