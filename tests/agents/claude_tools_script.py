"""The stub's side of a bot using anvilfs's tools through Claude Code: plans of tool calls, and a server with roles.

    plans = Plans({"work on your bead": [call("ready"), lambda said: call("claim", bead=first_word(said)), ...]})
    stub.script = plans

A prompt that contains a plan's key is answered step by step: the first
request with the first step's reply, each request that brings a tool's
result with the next step's (a step is a reply, or a function of the last
tool result's text to one: a model reads what the tool said, e.g. the id
`ready` listed), and once the steps are done with a text naming the last
result, which ends the turn. A step calling a tool the CLI did not offer
in that request is sent all the same (the CLI then refuses it) and noted
in ``unoffered``: a test of the offered tools asserts it stays empty.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from claude_env import claude_env
from drive import agent_server, cli
from harness.server import AnvilServer
from stubs import Reply, Request, StubModels, Text, ToolCall, directives

Step = Reply | Callable[[str], Reply]
ROLES = {"researcher": "You research and write down what you found.", "developer": "You build what was asked."}


def call(tool: str, **arguments) -> ToolCall:
    """A call of anvilfs's tool TOOL, as Claude Code names it (mcp__anvilfs__TOOL)."""
    return ToolCall(f"mcp__anvilfs__{tool}", arguments, text=f"[stub anthropic] calling {tool}")


def bash(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "anvilfs's shell path"})


def first_word(text: str, line: int = 1) -> str:
    """The first word of line LINE (0 the first) of a tool's answer: the id in `ready`'s or `inbox`'s list."""
    lines = text.splitlines()
    assert len(lines) > line, f"the tool's answer has no line {line}: {text!r}"
    return lines[line].split(" ", 1)[0]


class Plans:
    def __init__(self, plans: dict[str, list[Step]]):
        self.plans = plans
        self.unoffered: list[str] = []

    def __call__(self, request: Request) -> Reply:
        key = next((key for key in self.plans if key in request.prompt), None)
        if key is None:
            return directives(request)
        results = _results_of_this_turn(request)
        steps = self.plans[key]
        if len(results) >= len(steps):
            return Text(f"[stub anthropic] {key}: done; the last tool said: {results[-1] if results else '-'}")
        step = steps[len(results)]
        reply = step(results[-1] if results else "") if callable(step) else step
        if isinstance(reply, ToolCall) and reply.name not in request.tools:
            self.unoffered.append(reply.name)
        return reply


def _results_of_this_turn(request: Request) -> list[str]:
    """The tool results after the last prompt."""
    last_user = max((i for i, (role, _) in enumerate(request.messages) if role == "user"), default=-1)
    return [text for role, text in request.messages[last_user + 1:] if role == "tool"]


@contextlib.contextmanager
def tools_server(stub: StubModels, plans: Plans) -> Iterator[AnvilServer]:
    """A server whose claude sessions get the tools (the built-in backend), with the roles of ROLES."""
    def roles(home: Path) -> None:  # roles/ beside the config file, which agent_server writes in home's parent
        directory = home.parent / "roles"
        directory.mkdir()
        for role, text in ROLES.items():
            (directory / f"{role}.md").write_text(text + "\n")

    stub.script = plans
    with agent_server(stub, "claude", env=claude_env(stub), config="# the built-in backends; roles/ beside\n",
                      home=roles) as srv:
        yield srv


def new_bead(srv: AnvilServer, command: str) -> str:
    """Make a bead as the human (`new ...` on beads/ctl); its id."""
    def ids() -> set[str]:
        return {line.split(" ", 1)[0] for line in cli(srv, "read", "agent/beads/list").splitlines()}

    before = ids()
    cli(srv, "write", "agent/beads/ctl", command)
    (made,) = ids() - before
    return made


def bead_field(srv: AnvilServer, bead: str, name: str) -> str:
    return cli(srv, "read", f"agent/beads/{bead}/{name}").strip()
