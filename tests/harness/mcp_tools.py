"""`anvilfs mcp` driven by the MCP SDK's own client, as an agent CLI would start and call it.

    with tool_client(srv, "bot1") as tools:          # a real `anvilfs mcp` subprocess on stdio
        tools.names                                   # what tools/list offered
        tools.call("claim", bead="fix-001")           # the text, or ToolRefused with the model's error text

The SDK's client is anyio's; a blocking portal runs it in a thread of its
own, so a test stays a plain function (pytest-trio takes async ones). Every
call has a deadline (CALL_TIMEOUT) that fails the test with its name.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from anyio.from_thread import start_blocking_portal

from .server import AnvilServer, anvil_server

CALL_TIMEOUT = 30  # s: one tool call, a few 9P round trips; the first also dials


class ToolRefused(Exception):
    """The tool answered is_error: the text is what the model sees."""


def anvilfs_command() -> str:
    return str(Path(sys.executable).parent / "anvilfs")


def identity_env(srv: AnvilServer, session: str, *, conductor: bool = False) -> dict[str, str]:
    env = {"ANVILFS_SESSION": session, "ANVILFS_ADDRESS": srv.address}
    return env | ({"ANVILFS_CONDUCTOR": "1"} if conductor else {})


class ToolClient:
    def __init__(self, portal, session, init, listed):
        self._portal, self._session = portal, session
        self.instructions = init.instructions or ""
        self.tools = listed.tools
        self.names = [tool.name for tool in listed.tools]

    def list_bytes(self) -> int:
        """The tool list's size as JSON, as tools/list carries it."""
        return len(json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in self.tools]))

    def result(self, name: str, /, **arguments):
        async def call():
            import anyio

            with anyio.fail_after(CALL_TIMEOUT):
                return await self._session.call_tool(name, arguments)
        try:
            return self._portal.call(call)
        except TimeoutError:
            raise AssertionError(f"tool {name} did not answer in {CALL_TIMEOUT}s") from None

    def cancel_after(self, seconds: float, name: str, /, **arguments) -> None:
        """Call NAME and give up on it after SECONDS, as a CLI whose user pressed Esc: the SDK sends the
        server notifications/cancelled. Fails if the call answered first."""
        async def call():
            import anyio

            with anyio.move_on_after(seconds) as scope:
                await self._session.call_tool(name, arguments)
            return scope.cancelled_caught
        assert self._portal.call(call), f"tool {name} answered before it was cancelled"

    def call(self, name: str, /, **arguments) -> str:
        result = self.result(name, **arguments)
        text = "\n".join(block.text for block in result.content if getattr(block, "text", None) is not None)
        if result.is_error:
            raise ToolRefused(text)
        return text


@contextlib.contextmanager
def tool_client(srv: AnvilServer, session: str, *, conductor: bool = False,
                env: dict[str, str] | None = None) -> Iterator[ToolClient]:
    """`anvilfs mcp` for SESSION of SRV (env replaces the identity environment when given)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    environment = {"PATH": os.environ.get("PATH", "")} | (identity_env(srv, session, conductor=conductor)
                                                          if env is None else env)
    params = StdioServerParameters(command=anvilfs_command(), args=["mcp"], env=environment)

    @contextlib.asynccontextmanager
    async def connected():
        import anyio

        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            with anyio.fail_after(CALL_TIMEOUT):
                init = await client.initialize()
                listed = await client.list_tools()
            yield client, init, listed

    with start_blocking_portal() as portal, portal.wrap_async_context_manager(connected()) as (client, init, listed):
        yield ToolClient(portal, client, init, listed)


# ------------------------------------------------------------ a team of sessions, and the human's side

ROLES = {"researcher": "You research.\n", "developer": "You build.\n"}


@contextlib.contextmanager
def team(*sessions: tuple[str, str]) -> Iterator[AnvilServer]:
    """A server with the roles of ROLES and a sim session per (name, role)."""
    with anvil_server() as srv:
        roles = srv.base / "xdg-config" / "anvilfs" / "roles"
        roles.mkdir(parents=True)
        for role, text in ROLES.items():
            (roles / f"{role}.md").write_text(text)
        for name, role in sessions:
            srv.run_cli("write", "agent/ctl", f"new sim /tmp name={name} role={role}")
        yield srv


def bead(srv: AnvilServer, title: str, role: str, *more: str) -> str:
    """A bead made by the human (a ctl line, as a person would), its id."""
    with srv.connect("glenda") as client:
        words = " ".join(more)
        return client_rdwr(client, "beads/ctl", f'new "{title}" {role} "do {title}" {words}\n')


def client_rdwr(client, path: str, line: str) -> str:
    return client.read_back(path, line.encode()).decode().strip()


def read(srv: AnvilServer, path: str) -> str:
    with srv.connect("glenda") as client:
        return client.read_file(path).decode()
