"""The tests' private tmux servers leave nothing behind: no server, no socket file."""

from __future__ import annotations

import subprocess

import pytest

from harness.tmux import private_tmux, socket_path

pytestmark = pytest.mark.needs("tmux")


def test_a_private_tmux_server_and_its_socket_are_gone_afterwards():
    with private_tmux() as name:
        subprocess.run(["tmux", "-L", name, "new-session", "-d", "sleep 600"], check=True, timeout=10)
        assert socket_path(name).exists()
    assert not socket_path(name).exists()
    alive = subprocess.run(["tmux", "-L", name, "has-session"], capture_output=True, timeout=10)
    assert alive.returncode != 0, "the tmux server still runs"
