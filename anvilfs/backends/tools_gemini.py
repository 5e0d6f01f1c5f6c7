"""Gemini CLI 0.61: the tools through a Gemini home of the session's own; the user's files stay as they are.

0.61 takes MCP servers from settings files and extensions only: no flag names one (gemini-cli#11788).
The settings files an environment variable can move are the system ones (GEMINI_CLI_SYSTEM_SETTINGS_PATH,
GEMINI_CLI_SYSTEM_DEFAULTS_PATH), and 0.61 skips those, with a warning, unless the file and every
directory above it belong to root and no one else can write them: no use to a user who is not root,
and it would drop the administrator's own. An extension may neither trust its server nor allow a tool.
So the session's agent gets GEMINI_CLI_HOME = STATE/agents/NAME/gemini, whose .gemini holds

    settings.json     the user's ~/.gemini/settings.json as it was when the session's agent first ran,
                      plus mcpServers.anvilfs (this anvilfs's `mcp`, the identity in its env) and
                      tools.allowed naming exactly its tools (mcp_anvilfs_claim ...): these run unasked
                      in auto_edit (headless, 0.61 does not even offer a tool its policy refuses); the
                      shell and any other MCP server's tools stay as the user set them. Not `trust`
                      (any tool of the server), not --allowed-mcp-server-names (it stops the others)
    GEMINI.md         the user's global GEMINI.md, then the brief: 0.61 ends its system prompt with it
    tmp/, projects.json, history/
                      the session's own (gemini makes them): its conversations, kept apart from the
                      user's (0.61 rewrites projects.json by renaming, which would break a link to it)
    anything else     a link to the user's own: credentials, extensions, commands, skills, policies ...

and links .env and .agents beside it to the user's (0.61 looks for those under GEMINI_CLI_HOME too).
GEMINI_CLI_TRUSTED_FOLDERS_PATH names the user's own trustedFolders.json: whether the session's folder
is trusted stays the user's decision (headless 0.61 refuses an untrusted folder, exit 55). If the user's
settings.json is not JSON, settings.json is a link to it, and gemini says what is wrong in its own words.
"""

from __future__ import annotations

import json
import os
import re

from .agent_tools import MCP_SERVER, ToolSetup, Wiring

# What 0.61 keeps of its own in GEMINI_CLI_HOME/.gemini: never linked to the user's (see the module's docstring).
_OWN = {"settings.json", "tmp", "history", "projects.json", "projects.json.lock", "trustedFolders.json"}
_BESIDE = (".env", ".agents")  # looked for in GEMINI_CLI_HOME itself
# A JSON string, or a // or /* */ comment (settings.json may have comments: 0.61 strips them before parsing).
_JSONC = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)


def wire(setup: ToolSetup) -> Wiring:
    if not setup.session.home:
        return Wiring()  # no private directory to hold a Gemini home (a server without state): no tools
    # the user's Gemini directory, as anvilfs's environment has it (what a gemini started by hand would read)
    user = os.path.join(os.environ.get("GEMINI_CLI_HOME") or os.path.expanduser("~"), ".gemini")
    trusted = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(user, "trustedFolders.json")
    home = os.path.join(setup.session.home, "gemini")
    own = os.path.join(home, ".gemini")
    os.makedirs(own, mode=0o700, exist_ok=True)
    settings = _user_settings(os.path.join(user, "settings.json"))
    if settings is None:
        _link(os.path.join(user, "settings.json"), os.path.join(own, "settings.json"), replace=True)
    else:
        _write(os.path.join(own, "settings.json"), json.dumps(with_tools(settings, setup), indent=2))
    memory = _memory_name(settings or {})
    # the brief names the tools as Claude Code and codex do; gemini calls them mcp_anvilfs_claim ...
    brief = setup.brief.replace(f"mcp__{MCP_SERVER}__", f"mcp_{MCP_SERVER}_")
    _write(os.path.join(own, memory), _read(os.path.join(user, memory)) + brief + "\n")
    for entry in _entries(user):
        if entry not in _OWN and entry != memory:
            _link(os.path.join(user, entry), os.path.join(own, entry))
    for entry in _BESIDE:
        _link(os.path.join(os.path.dirname(user), entry), os.path.join(home, entry))
    return Wiring(env={"GEMINI_CLI_HOME": home, "GEMINI_CLI_TRUSTED_FOLDERS_PATH": trusted})


def with_tools(settings: dict, setup: ToolSetup) -> dict:
    """The user's settings with the server `anvilfs` and its tools allowed by name (gemini calls them mcp_anvilfs_X)."""
    server = {"command": setup.anvilfs, "args": ["mcp"], "env": setup.mcp_env,
              "description": "anvilfs: beads, convoys and mail, as this session"}
    tools = dict(settings.get("tools") or {})
    allowed = list(tools.get("allowed") or [])
    tools["allowed"] = allowed + [name for name in setup.qualified("_") if name not in allowed]
    changed = {**settings, "mcpServers": {**(settings.get("mcpServers") or {}), MCP_SERVER: server}, "tools": tools}
    mcp = settings.get("mcp") or {}
    if isinstance(mcp.get("allowed"), list) and MCP_SERVER not in mcp["allowed"]:
        # the user's list of the servers to start would leave ours out
        changed["mcp"] = {**mcp, "allowed": [*mcp["allowed"], MCP_SERVER]}
    return changed


def _user_settings(path: str) -> dict | None:
    """The user's settings ({} if none), None if they are not a JSON object (gemini will say why)."""
    text = _read(path)
    try:
        settings = json.loads(_JSONC.sub(lambda match: match.group(1) or "", text)) if text.strip() else {}
    except ValueError:
        return None
    return settings if isinstance(settings, dict) else None


def _memory_name(settings: dict) -> str:
    """The global memory file's name: the first of context.fileName, GEMINI.md by default."""
    names = (settings.get("context") or {}).get("fileName") or "GEMINI.md"
    name = names if isinstance(names, str) else (names[0] if names else "GEMINI.md")
    return os.path.basename(name) or "GEMINI.md"


def _entries(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []  # no ~/.gemini yet: nothing of the user's to link


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return ""
    return text if not text or text.endswith("\n\n") else text.rstrip("\n") + "\n\n"


def _write(path: str, text: str) -> None:
    if os.path.islink(path):
        os.unlink(path)  # once a link (the user's settings were not JSON then): never write through it
    tmp = path + ".new"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as file:
        file.write(text)  # the identity's token may be in it: the user's alone from the start
    os.replace(tmp, path)


def _link(target: str, link: str, replace: bool = False) -> None:
    """LINK -> TARGET where nothing is yet (what gemini itself made there stays, unless REPLACE)."""
    if os.path.lexists(link):
        if os.path.islink(link) and os.readlink(link) == target:
            return
        if not (replace or os.path.islink(link)):
            return
        os.unlink(link)
    if os.path.lexists(target):
        os.symlink(target, link)
