"""codex (0.171): the tools through -c settings alone; nothing is written to the user's ~/.codex.

    mcp_servers.anvilfs.command/args/env   this anvilfs's `mcp`, the identity in its own env: codex
                                           hands its MCP servers none of the agent's environment
    mcp_servers.anvilfs.required = true    codex waits for the server before its first request: an
                                           optional server gets 1 s (mcp_optional_startup_grace_ms),
                                           less than `anvilfs mcp` takes on a loaded machine, and its
                                           tools were then missing from the turn (measured)
    mcp_servers.anvilfs.enabled_tools      exactly these tools, each with approval_mode = "approve":
    mcp_servers.anvilfs.tools.NAME         under `exec`'s approval policy "never" an MCP call is
                                           otherwise refused ("MCP tool call requires approval, but
                                           approval policy is never"); the policy itself, and so the
                                           shell's sandbox, stays as it is
    developer_instructions                 the brief, after codex's own instructions (a developer
                                           message of its own); the user's own developer_instructions
                                           from CODEX_HOME/config.toml are kept in front of it

codex offers the tools its own way (docs/backends.md): to a model with tool
search (gpt-5.5) behind `tool_search`, to others as one namespace tool
`mcp__anvilfs`. No shell path: the workspace-write sandbox refuses the
tree's socket, and an execpolicy rule allowing `anvilfs ...` would run it
outside the sandbox, with `-a tcp!HOST!PORT` and `--token-file FILE` at hand.
"""

from __future__ import annotations

import json
import os
import tomllib

from .agent_tools import MCP_SERVER, ToolSetup, Wiring

STARTUP_TIMEOUT = 30  # s: `anvilfs mcp` starts in about 1 s; a loaded machine gets room (codex's default is 10)
# A conductor's `wait` tool waits for a turn to end: as long as the built-in codex backend's turn timeout,
# not codex's default 60 s per tool call.
CONDUCTOR_TOOL_TIMEOUT = 3600


def toml_value(value) -> str:
    """VALUE as TOML for a -c override. codex parses the text after `=` as TOML, and takes text that does not
    parse as a plain string: a brief that came out as bad TOML would reach the model with its quotes."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_value(key)} = {toml_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, str):  # not json.dumps: its \ud83d\ude00 for a character past U+FFFF is no TOML
        return '"' + "".join(_CHAR.get(char) or (f"\\u{ord(char):04x}" if ord(char) < 0x20 or char == "\x7f" else char)
                             for char in value) + '"'
    return json.dumps(value)  # booleans and numbers read the same in both


_CHAR = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


def user_developer_instructions(environ=os.environ) -> str:
    """The user's own developer_instructions (CODEX_HOME/config.toml, as codex finds it), kept by our -c."""
    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME", os.path.expanduser("~")), ".codex")
    try:
        with open(os.path.join(home, "config.toml"), "rb") as file:
            value = tomllib.load(file).get("developer_instructions", "")
    except (OSError, tomllib.TOMLDecodeError):
        return ""  # none, or a file codex itself will complain of
    return value.strip() if isinstance(value, str) else ""


def wire(setup: ToolSetup) -> Wiring:
    server = {"command": setup.anvilfs, "args": ["mcp"], "env": setup.mcp_env, "required": True,
              "startup_timeout_sec": STARTUP_TIMEOUT, "enabled_tools": list(setup.tool_names),
              "tools": {name: {"approval_mode": "approve"} for name in setup.tool_names}}
    if setup.session.conductor:
        server["tool_timeout_sec"] = CONDUCTOR_TOOL_TIMEOUT
    args = [arg for key, value in server.items() for arg in ("-c", f"mcp_servers.{MCP_SERVER}.{key}={toml_value(value)}")]
    instructions = "\n\n".join(filter(None, (user_developer_instructions(), setup.brief)))
    return Wiring(args=(*args, "-c", f"developer_instructions={toml_value(instructions)}"))
