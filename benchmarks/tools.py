"""What `anvilfs mcp` costs an agent: its tool list's bytes, its start-up, and one tool call's added latency.

    .venv/bin/python benchmarks/tools.py [--starts 20] [--calls 200]

    list      the tools/list result as JSON (the tools' names, descriptions and schemas), plain and conductor;
              what each CLI sends its model is measured at the stub by tests/agents/test_*_tools.py
    start     spawn of `anvilfs mcp` to its initialize answer (claude -p starts it every turn), wall and CPU
    call      `claim` of a bead through the tool (MCP client -> anvilfs mcp -> 9P -> the bead's file changed and
              answered) against the same ctl write from a 9P client already connected: the tool's added latency

Everything runs against a real `anvilfs serve` in temporary directories; the MCP client is the SDK's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from harness.mcp_tools import anvilfs_command, client_rdwr  # noqa: E402
from harness.server import start_server  # noqa: E402


def quantiles(samples: list[float]) -> str:
    samples = sorted(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    return f"median {statistics.median(samples) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms (n={len(samples)})"


async def _session(srv, name: str, body, conductor: bool = False):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {"PATH": os.environ["PATH"], "ANVILFS_SESSION": name, "ANVILFS_ADDRESS": srv.address}
    env |= {"ANVILFS_CONDUCTOR": "1"} if conductor else {}
    params = StdioServerParameters(command=anvilfs_command(), args=["mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        started = time.perf_counter()
        await client.initialize()
        return await body(client, started)


def list_bytes(srv) -> None:
    async def body(client, started):
        tools = (await client.list_tools()).tools
        return len(json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools])), len(tools)

    for conductor in (False, True):
        size, count = anyio.run(_session, srv, "bot", body, conductor)
        print(f"list: {'conductor' if conductor else 'worker   '} {count} tools, {size} bytes of JSON (target < 8192)")


def start_up(srv, starts: int) -> None:
    """Wall time from spawn to the initialize answer, and the child's CPU, per start."""
    walls, cpus = [], []
    for _ in range(starts):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        spawned = time.perf_counter()

        async def body(client, started):
            return time.perf_counter()

        answered = anyio.run(_session, srv, "bot", body)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the child has exited by now (stdio_client waits)
        walls.append(answered - spawned)
        cpus.append((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
    print(f"start: spawn to initialize answered {quantiles(walls)}; CPU a start median "
          f"{statistics.median(cpus) * 1000:.0f} ms")


def calls(srv, count: int) -> None:
    with srv.connect("glenda") as client:
        beads = [client_rdwr(client, "beads/ctl", f'new "t{i}" dev "d"\n') for i in range(2 * count)]
    via_tool, direct = beads[:count], beads[count:]

    async def body(client, started):
        times = []
        for bead in via_tool:
            t0 = time.perf_counter()
            result = await client.call_tool("claim", {"bead": bead})
            times.append(time.perf_counter() - t0)
            assert not result.is_error, result.content
        return times

    tool_times = anyio.run(_session, srv, "bot", body)
    direct_times = []
    with srv.connect("bot") as client:
        for bead in direct:
            t0 = time.perf_counter()
            client.write_file(f"beads/{bead}/ctl", b"claim\n")
            direct_times.append(time.perf_counter() - t0)
    print(f"call: claim through the tool {quantiles(tool_times)}")
    print(f"call: the same ctl write from a connected 9P client {quantiles(direct_times)}")
    print(f"call: added by the tool: median {(statistics.median(tool_times) - statistics.median(direct_times)) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="anvil.") as base:
        srv = start_server(Path(base), trace=False)
        try:
            srv.run_cli("write", "agent/ctl", "new sim /tmp name=bot")
            list_bytes(srv)
            start_up(srv, args.starts)
            calls(srv, args.calls)
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
