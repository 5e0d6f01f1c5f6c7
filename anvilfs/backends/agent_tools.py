"""How a built-in agent CLI is given anvilfs's tools: `anvilfs mcp`, the brief, and the shell path.

A backend with `mcp = true` asks the wiring of its program (argv[0]'s name:
claude, codex or gemini) for what to add when it starts the session's agent:

    args   put right after the program (claude --mcp-config ..., codex -c ...)
    env    added to the agent's environment (a CLI's own settings path ...)

Each wiring may write files the CLI reads into the session's own private
directory (SessionInfo.home, STATE/agents/NAME), never into the user's
settings or the session's cwd. Every wiring names the MCP server `anvilfs`
(its tools show as mcp__anvilfs__claim ...), runs this installation's
`anvilfs mcp`, and hands it the identity explicitly in the server's `env`
(codex gives its MCP servers none of the agent's environment). The
session's PATH starts with a directory holding only `anvilfs` (the shell
path, where a CLI allows a rule as narrow as its verbs).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..brief import brief, tool_names
from ..sessions import SessionInfo

MCP_SERVER = "anvilfs"
# The verbs of the shell path: reads and writes of tree files, mail and the inbox. Not notify (it runs
# commands), serve, install-service, web, mcp or hook.
SHELL_VERBS = ("read", "write", "ls", "stat", "rdwr", "rm", "mail", "inbox")


@dataclass(frozen=True)
class ToolSetup:
    """What a wiring knows of the session it wires."""

    session: SessionInfo
    anvilfs: str  # this installation's `anvilfs` command, absolute
    brief: str  # the static brief (also `anvilfs mcp`'s instructions)
    tool_names: tuple[str, ...]  # the tools `anvilfs mcp` offers this session, bare (claim, ready, ...)

    @property
    def mcp_env(self) -> dict[str, str]:
        """The MCP server's environment: who it acts as, and where the tree is.

        Never a token: claude's wiring puts this on its command line, which every local user can read
        (/proc/PID/cmdline). Agents reach the server by its unix socket, which needs none."""
        wanted = ("ANVILFS_SESSION", "ANVILFS_ADDRESS", "NAMESPACE", "ANVILFS_CONDUCTOR", "ANVILFS_WORKTREE")
        env = {key: value for key, value in self.session.env.items() if key in wanted}
        # the role, for the brief in the MCP server's instructions (codex and gemini have no other place for it)
        return env | ({"ANVILFS_ROLE": self.session.role} if self.session.role else {})

    def qualified(self, separator: str = "__") -> list[str]:
        """The tools as the CLI names them: mcp__anvilfs__claim ..."""
        return [f"mcp{separator}{MCP_SERVER}{separator}{name}" for name in self.tool_names]


@dataclass(frozen=True)
class Wiring:
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


Wire = Callable[[ToolSetup], Wiring]


def _wirings() -> dict[str, Wire]:
    from .tools_claude import wire as claude  # noqa: PLC0415 - the three import each other's module lazily
    from .tools_codex import wire as codex  # noqa: PLC0415
    from .tools_gemini import wire as gemini  # noqa: PLC0415

    return {"claude": claude, "codex": codex, "gemini": gemini}


def known_programs() -> list[str]:
    return sorted(_wirings())


def wiring_for(program: str) -> Wire | None:
    return _wirings().get(os.path.basename(program))


def anvilfs_command() -> str:
    """The `anvilfs` beside this interpreter (a venv's bin), else the one on PATH, else `python -m anvilfs`'s."""
    beside = os.path.join(os.path.dirname(sys.executable), "anvilfs")
    if os.access(beside, os.X_OK):
        return beside
    from shutil import which  # noqa: PLC0415

    return which("anvilfs") or beside


def shell_bin(home: str, anvilfs: str) -> str:
    """A directory in the session's home holding only `anvilfs` (a link to this one), for the head of its PATH."""
    directory = os.path.join(home, "bin")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    link = os.path.join(directory, "anvilfs")
    if os.path.realpath(link) != os.path.realpath(anvilfs):
        tmp = link + ".new"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(anvilfs, tmp)
        os.replace(tmp, link)
    return directory


def wire(program: str, session: SessionInfo, base_env: Mapping[str, str]) -> Wiring:
    """What to add to the command line and environment of PROGRAM for SESSION's tools (PATH included)."""
    wiring_of = wiring_for(program)
    if wiring_of is None:
        return Wiring()
    anvilfs = anvilfs_command()
    setup = ToolSetup(session, anvilfs, brief(session.name, session.role, session.conductor, session.worktree),
                      tool_names(session.conductor))
    wiring = wiring_of(setup)
    if not session.home:
        return wiring
    path = base_env.get("PATH", os.environ.get("PATH", os.defpath))
    # ANVILFS_PINNED: the shell path's anvilfs refuses -a, -A and --token-file (cli.py), so that a rule that
    # allows `anvilfs read` cannot send a file to another host as a "token"
    return Wiring(wiring.args, {**wiring.env, "PATH": shell_bin(session.home, anvilfs) + os.pathsep + path,
                                "ANVILFS_PINNED": "1"})


def with_tools(argv: list[str], wiring: Wiring) -> list[str]:
    """ARGV with the wiring's arguments right after the program."""
    return [argv[0], *wiring.args, *argv[1:]]
