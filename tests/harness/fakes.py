"""The fake agent programs the tests run for real: a CLI agent and an OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

FAKES = Path(__file__).resolve().parent.parent / "fakes"
FAKE_AGENT = FAKES / "fake_agent.py"
OPENAI_SERVER = FAKES / "openai_server.py"


@dataclass
class FakeOpenAI:
    url: str  # base URL, ending in /v1
    log: Path  # one JSON line per request: {"path", "authorization", "body"}

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def messages(self, index: int = -1) -> list[dict]:
        return self.requests()[index]["body"]["messages"]


def _read_port(proc: subprocess.Popen, stderr: Path, deadline: float = 15) -> int:
    ready, _, _ = select.select([proc.stdout], [], [], deadline)
    line = proc.stdout.readline() if ready else ""
    if not line.strip().isdigit():
        raise AssertionError(f"fake server gave no port (got {line!r}):\n{stderr.read_text()}")
    return int(line)


@contextlib.contextmanager
def fake_openai_server(directory: Path) -> Iterator[FakeOpenAI]:
    """tests/fakes/openai_server.py on a free loopback port, killed afterwards."""
    stderr = directory / "openai-server.stderr"
    log = directory / "openai-requests.jsonl"
    with open(stderr, "w") as err:
        proc = subprocess.Popen([sys.executable, str(OPENAI_SERVER), "--log", str(log)],
                                stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        yield FakeOpenAI(f"http://127.0.0.1:{_read_port(proc, stderr)}/v1", log)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
