"""[repos."PATH"] read by a real `anvilfs serve --config`: a bad table stops the start with the key named,
a good one lets it serve (docs/worktrees.md; every refusal is in tests/domain/test_config_repos.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.cli_runs import ok
from harness.server import REPO_ROOT, anvil_server


def serve(tmp_path: Path, config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "anvilfs", "serve", "--namespace", str(tmp_path / "ns"), "--state",
         str(tmp_path / "state"), "--config", str(config)],
        capture_output=True, text=True, timeout=30, cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
        env=os.environ | {"XDG_CONFIG_HOME": str(tmp_path / "cfg")})


def test_a_gate_given_as_shell_text_stops_the_server_from_starting(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text(f'[repos."{tmp_path}"]\ngates = ["make test"]\n')
    result = serve(tmp_path, config)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert (f'  [repos."{tmp_path}"] gates: command 1 is the string "make test": give each command as an argv list, '
            '["make", "test"], e.g. gates = [["make", "test"]]; the server never runs shell text') in result.stderr


def test_a_relative_repository_path_stops_the_server_from_starting(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text('[repos."src/app"]\npush = true\n')
    result = serve(tmp_path, config)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert 'repos: [repos."src/app"] is not an absolute path' in result.stderr


def test_a_server_with_repository_tables_serves(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text(f'[repos."{tmp_path}"]\nmode = "merge"\nsetup = [["true"]]\ngates = [["make", "test"]]\n'
                      'gate_timeout = 60\npush = true\nremote = "origin"\npush_timeout = 30\n')
    with anvil_server(extra_args=["--config", str(config)]) as srv:
        assert "sim sim ready simulated\n" in ok(srv, "read", "agent/backends")
