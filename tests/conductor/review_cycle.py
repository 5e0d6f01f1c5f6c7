"""The review cycle against a real server, for the conductor's tests and benchmark.

    with review_server() as srv:                       # command backends running tests/fakes/review_agent.py
        path = write_workflow(base, reviewers=5)       # the cycle of conductor/examples/review.toml
        proc = run_conductor(srv, path, state)         # a real `python -m conductor run` process
        transcripts(srv, names)                        # each session's log, and the prompts in it
        Events(srv).until(" conductor-review running") # what came in `events` since the last mark
        release(fifo)                                  # let a gate that reads the fifo go on
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from anvilfs.client import ConnectionLost
from anvilfs.ninep import consts as c
from conductor.markers import prompts_in_log
from harness.server import REPO_ROOT, AnvilServer, anvil_server

AGENT = REPO_ROOT / "tests" / "fakes" / "review_agent.py"
RUN = "t1"  # the run id every test gives, so that two runs' prompts read the same
TIMEOUT = 20  # seconds for anything a test waits on


def config_text() -> str:
    return "".join(f'[backends.{role}]\nkind = "command"\nargv = ["{sys.executable}", "{AGENT}", "{role}"]\n'
                   for role in ("reviewer", "developer"))


@contextlib.contextmanager
def review_server(base: Path, **kwargs) -> Iterator[AnvilServer]:
    config = base / "config.toml"
    config.write_text(config_text())
    with anvil_server(extra_args=["--config", str(config)], **kwargs) as srv:
        yield srv


def reviewer_names(count: int) -> list[str]:
    return [f"r{i}" for i in range(1, count + 1)]


def workflow_text(reviewers: int, cwd: Path, max_rounds: int = 4) -> str:
    names = reviewer_names(reviewers)
    sessions = "".join(f'[sessions.{n}]\nbackend = "reviewer"\ncwd = "{cwd}"\n' for n in names)
    outs = "\n".join(f"{n}: {{out.{n}}}" for n in names)
    return f'''name = "review"
[sessions.dev]
backend = "developer"
cwd = "{cwd}"
{sessions}
[groups]
reviewers = {names!r}

[[steps]]
id = "cycle"
kind = "repeat"
max_rounds = {max_rounds}
  [[steps.steps]]
  id = "review"
  kind = "prompt"
  to = ["reviewers"]
  text = """
Review round {{round}}. The developer said:
{{out.dev}}
"""
  [[steps.steps]]
  id = "reviewed"
  kind = "wait"
  sessions = ["reviewers"]
  [[steps.steps]]
  id = "clean"
  kind = "check"
  none = ["reviewers"]
  contains = "ISSUE:"
  [[steps.steps]]
  id = "fix"
  kind = "prompt"
  to = ["dev"]
  text = """
Fix round {{round}}. The reviewers said:
{outs}
"""
  [[steps.steps]]
  id = "fixed"
  kind = "wait"
  sessions = ["dev"]
'''.replace("'", '"')


def write_workflow(base: Path, reviewers: int) -> Path:
    (base / "work").mkdir(exist_ok=True)
    path = base / "review.toml"
    path.write_text(workflow_text(reviewers, base / "work"))
    return path


def conductor_argv(srv: AnvilServer, workflow: Path, state: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "conductor", "run", "-a", srv.address, "--state", str(state),
            "--run", RUN, "--retry-for", "30", *extra, str(workflow)]


def run_conductor(srv: AnvilServer, workflow: Path, state: Path, *extra: str, env: dict | None = None,
                  timeout: float = 50) -> subprocess.CompletedProcess[str]:
    return subprocess.run(conductor_argv(srv, workflow, state, *extra), capture_output=True, text=True,
                          cwd=REPO_ROOT, env=os.environ | (env or {}), timeout=timeout)


def transcripts(srv: AnvilServer, names: list[str]) -> dict[str, str]:
    """Each session's log with the times taken out: what two runs of the same cycle must share."""
    with srv.connect("test", timeout=TIMEOUT) as client:
        return {n: re.sub(r" at \S+Z", " at TIME", client.read_file(f"{n}/log").decode()) for n in names}


def prompts(srv: AnvilServer, names: list[str]) -> dict[str, list[str]]:
    return {n: prompts_in_log(log) for n, log in transcripts(srv, names).items()}


def expected_prompts(reviewers: int) -> dict[str, list[str]]:
    """Rounds 1 and 2 for every reviewer, round 1's fix for the developer: each once."""
    head = f"[conductor review run {RUN} round"
    want = {n: [f"{head} 1 step review]", f"{head} 2 step review]"] for n in reviewer_names(reviewers)}
    return want | {"dev": [f"{head} 1 step fix]"]}


def release(fifo: Path) -> None:
    """Let a gate held on `read x < FIFO` go on: the open waits for the gate's reader, so it is done in a thread,
    with a deadline."""
    def go() -> None:
        with open(fifo, "w") as pipe:
            pipe.write("go\n")
    opener = threading.Thread(target=go, daemon=True)
    opener.start()
    opener.join(TIMEOUT)
    assert not opener.is_alive(), f"no gate read {fifo} within {TIMEOUT}s"


class Events:
    """An `events` reader opened before the conductor starts; `until` looks at what came since the last mark."""

    def __init__(self, srv):
        self.client = srv.connect("test", timeout=TIMEOUT)
        self.fid = self.client.open("events", c.OREAD)
        self.seen, self.start = "", 0

    def until(self, text: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while text not in self.seen[self.start:]:  # each read blocks until lines come (20 s socket timeout)
            try:
                assert time.monotonic() < deadline, "too late"
                self.seen += self.client.read_chunk(self.fid, 0).decode()
            except (AssertionError, ConnectionLost) as exc:
                raise AssertionError(f"no {text!r} in events within {TIMEOUT}s ({exc}):\n{self.seen}") from None
        self.start = self.seen.index(text, self.start) + len(text)
