"""What backends/agent_tools.py puts on an agent CLI's command line, which every local user can read
(/proc/PID/cmdline): the session's identity and address, never a secret."""

from __future__ import annotations

import json

from anvilfs.backends.agent_tools import ToolSetup
from anvilfs.backends.tools_claude import wire
from anvilfs.sessions import SessionInfo


def test_a_token_in_the_sessions_environment_stays_off_the_command_line():
    env = {"ANVILFS_SESSION": "bot1", "ANVILFS_ADDRESS": "tcp!10.0.0.1!564", "ANVILFS_TOKEN": "s3cret"}
    session = SessionInfo(name="bot1", cwd="/tmp", role="developer", env=env)
    args = wire(ToolSetup(session, "/usr/bin/anvilfs", "brief", ("claim",))).args
    assert not any("s3cret" in arg for arg in args)
    server = json.loads(args[args.index("--mcp-config") + 1])["mcpServers"]["anvilfs"]
    assert server["env"] == {"ANVILFS_SESSION": "bot1", "ANVILFS_ADDRESS": "tcp!10.0.0.1!564",
                             "ANVILFS_ROLE": "developer"}, "the role goes along, for the brief in its instructions"
