"""Claude Code (claude -p, and claude in tmux): the tools through --mcp-config, allowed by name.

    --mcp-config JSON          the server `anvilfs` (this anvilfs's `mcp`, the identity in its env),
                               "alwaysLoad": true: 2.1.332 otherwise hides MCP tools behind its
                               ToolSearch, and a model that does not search never sees them
    --allowedTools LIST        exactly these tools, and Bash for the shell path's verbs alone:
                               `Bash(anvilfs read:*)` matches whole words; 2.1.332 still asks for
                               (print mode: refuses) any part of a chain, $(...) or pipe that no
                               rule matches
    --append-system-prompt     the brief (appended: Claude Code's own system prompt stays)

Nothing is written to the user's settings: the flags hold it all. claude-tmux
gets the same flags; its TUI does not wait for the MCP server before it
takes input, so a prompt typed soon after its start may lack the tools
(docs/backends.md). Measured and tested: tests/agents/test_claude_tools.py.
"""

from __future__ import annotations

import json

from .agent_tools import MCP_SERVER, SHELL_VERBS, ToolSetup, Wiring


def wire(setup: ToolSetup) -> Wiring:
    server = {"type": "stdio", "command": setup.anvilfs, "args": ["mcp"], "env": setup.mcp_env, "alwaysLoad": True}
    allowed = setup.qualified() + [f"Bash(anvilfs {verb}:*)" for verb in SHELL_VERBS]
    return Wiring(args=("--mcp-config", json.dumps({"mcpServers": {MCP_SERVER: server}}),
                        "--allowedTools", ",".join(allowed),
                        "--append-system-prompt", setup.brief))
