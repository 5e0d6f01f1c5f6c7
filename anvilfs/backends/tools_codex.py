"""codex: the tools through -c mcp_servers.anvilfs.* (a first cut, to be measured against codex 0.171)."""

from __future__ import annotations

import json

from .agent_tools import MCP_SERVER, ToolSetup, Wiring


def wire(setup: ToolSetup) -> Wiring:
    prefix = f"mcp_servers.{MCP_SERVER}"
    env = "{" + ", ".join(f"{key} = {json.dumps(value)}" for key, value in setup.mcp_env.items()) + "}"
    return Wiring(args=("-c", f"{prefix}.command={json.dumps(setup.anvilfs)}", "-c", f'{prefix}.args=["mcp"]',
                        "-c", f"{prefix}.env={env}"))
