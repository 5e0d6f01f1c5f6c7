"""`anvilfs install-service`: the systemd user unit it writes is valid and its command really serves."""

from __future__ import annotations

import os
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.server import REPO_ROOT
from harness.vm import wait_for_unix_socket


def install(config_home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "anvilfs", "install-service", *args], capture_output=True, text=True,
                          timeout=30, cwd=REPO_ROOT, env=os.environ | {"XDG_CONFIG_HOME": str(config_home)} | (env or {}))


def test_the_unit_runs_this_anvilfs_and_never_kills_the_tmux_agents(tmp_path):
    result = install(tmp_path, "--", "--listen", "tcp!127.0.0.1!5640")
    assert result.returncode == 0, result.stderr
    unit = (tmp_path / "systemd" / "user" / "anvilfs.service").read_text()
    assert "systemctl --user enable --now anvilfs" in result.stdout
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert shlex.split(exec_start.removeprefix("ExecStart=")) == [sys.executable, "-m", "anvilfs", "serve", "--listen", "tcp!127.0.0.1!5640"]
    assert "KillMode=process" in unit and "Restart=on-failure" in unit and "WantedBy=default.target" in unit
    if shutil.which("systemd-analyze"):
        check = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "systemd" / "user" / "anvilfs.service")],
                               capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr


def said_by(proc: subprocess.Popen, text: bytes, timeout: float) -> bytes:
    """What the process wrote to stderr up to the line with `text`; fails after `timeout` seconds."""
    got, deadline = b"", time.monotonic() + timeout
    while text not in got:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stderr], [], [], left)[0]:
            raise AssertionError(f"the server did not say {text!r} within {timeout} s; it said: {got!r}")
        piece = os.read(proc.stderr.fileno(), 4096)
        if not piece:
            raise AssertionError(f"the server ended before it said {text!r}; it said: {got!r}")
        got += piece
    return got


def test_the_units_command_serves(tmp_path):
    result = install(tmp_path, "--print")
    exec_start = next(line for line in result.stdout.splitlines() if line.startswith("ExecStart="))
    base = Path(tempfile.mkdtemp(prefix="anvsv.", dir="/tmp"))
    argv = shlex.split(exec_start.removeprefix("ExecStart=")) + ["--namespace", str(base / "ns"), "--state", str(base / "st")]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=os.environ | {"XDG_CONFIG_HOME": str(tmp_path)}, cwd="/")
    try:
        wait_for_unix_socket(base / "ns" / "agent", timeout=30, proc=proc)
        said = said_by(proc, b"mount: sudo mount -t 9p", timeout=30)  # the socket comes before the lines
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        shutil.rmtree(base, ignore_errors=True)
    err = said + err
    assert proc.returncode == 0, err  # SIGTERM, as systemd stops it: a clean stop
    assert b"serving unix!" in err and b"mount: sudo mount -t 9p" in err
    assert not (tmp_path / "systemd").exists()  # --print wrote nothing


@pytest.mark.parametrize("args", [["--print", "--", "--state", "/tmp/100%"]])
def test_percent_signs_are_escaped_for_systemd(tmp_path, args):
    result = install(tmp_path, *args)
    assert "/tmp/100%%" in result.stdout


def test_the_unit_carries_the_shells_namespace_path_and_agent_keys_and_only_you_may_read_it(tmp_path):
    """Issue 32: a user service gets none of the login shell's environment; the agents it starts need the
    keys and endpoints, the clients its NAMESPACE. Keys are secrets: the unit is 0600, and says which it holds."""
    (tmp_path / "anvilfs").mkdir()
    (tmp_path / "anvilfs" / "config.toml").write_text(
        '[backends.mine]\nkind = "openai"\nurl = "http://127.0.0.1:9/v1"\napi_key_env = "MY_ODD_TOKEN"\n')
    env = {"NAMESPACE": "/tmp/ns.svc", "OPENAI_API_KEY": 'sk-"a%b\\c', "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
           "MY_ODD_TOKEN": "t0k", "UNRELATED_THING": "x", "GEMINI_API_KEY": "two\nlines"}
    result = install(tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    path = tmp_path / "systemd" / "user" / "anvilfs.service"
    assert path.stat().st_mode & 0o777 == 0o600
    unit = path.read_text()
    for line in ('Environment="NAMESPACE=/tmp/ns.svc"', 'Environment="OPENAI_API_KEY=sk-\\"a%%b\\\\c"',
                 'Environment="ANTHROPIC_BASE_URL=http://127.0.0.1:9"', 'Environment="MY_ODD_TOKEN=t0k"',
                 f'Environment="PATH={os.environ["PATH"]}"'):
        assert line in unit.splitlines(), (line, unit)
    assert "UNRELATED_THING" not in unit and "GEMINI_API_KEY" not in unit, unit
    said = result.stdout
    assert "mode 0600" in said and "OPENAI_API_KEY" in said and "secrets" in said, said
    assert "not carried, since a unit cannot hold a line break: GEMINI_API_KEY" in said and "two" not in said, said
    if shutil.which("systemd-analyze"):
        check = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr
