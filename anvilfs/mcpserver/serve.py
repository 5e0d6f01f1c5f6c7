"""`anvilfs mcp`: the session's tools as a Model Context Protocol server on stdio (the official SDK).

The agent CLI starts it (claude -p at every turn), so its start-up counts:
the SDK is imported here, in the command alone, and the tree is dialled at
the first tool call, not before the CLI's handshake. Each call runs in a
worker thread (the client is blocking), so the SDK's loop keeps answering
pings and cancellations meanwhile. stdio only: an HTTP listener would be a
second API beside 9P, with an access check of its own to get right.
"""

from __future__ import annotations

import sys

from ..brief import brief
from .tools import ToolError, call, offered
from .tree import Identity, SessionTree

SERVER_NAME = "anvilfs"  # the CLIs show the tools as mcp__anvilfs__claim and the like


def main(args=None) -> int:
    try:
        identity = Identity.from_environment()
    except ToolError as exc:
        print(f"anvilfs mcp: {exc}", file=sys.stderr)
        return 2
    import anyio  # noqa: PLC0415 - the SDK's own runtime, for this command alone

    anyio.run(_serve, identity)
    return 0


async def _serve(identity: Identity) -> None:
    import anyio  # noqa: PLC0415
    import mcp_types as types  # noqa: PLC0415
    from mcp.server.lowlevel import Server  # noqa: PLC0415
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    tree = SessionTree(identity)
    lock = anyio.Lock()  # one connection, one call on it at a time
    own_connection = {tool.name for tool in offered(identity.conductor) if tool.own_connection}
    tools = [types.Tool(name=tool.name, description=tool.description, input_schema=tool.schema())
             for tool in offered(identity.conductor)]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def run(name: str, arguments) -> str:
        if name in own_connection:  # a `wait`: beside other calls, and a cancel abandons it (it ends by its timeout)
            return await anyio.to_thread.run_sync(call, tree, name, arguments, abandon_on_cancel=True)
        async with lock:
            return await anyio.to_thread.run_sync(call, tree, name, arguments)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            text = await run(params.name, params.arguments)
        except ToolError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    server = Server(SERVER_NAME, instructions=brief(identity.session, identity.role, identity.conductor, identity.worktree),
                    on_list_tools=list_tools, on_call_tool=call_tool)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        tree.close()
