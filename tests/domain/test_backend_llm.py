"""The built-in `llm` backend keeps each session in its own conversation.

Real parts: an `anvilfs serve` process with no configuration (the built-in
backends), the real `llm` CLI with its offline `echo` model made the
default the way a user would (`llm models default echo`), its database in
a temp dir (LLM_USER_PATH). `llm logs` shows each answer's conversation_id,
which is what counts (echo's own "previous" list stays empty with llm 0.36).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.prerequisites import missing
from harness.server import start_server

LLM = shutil.which("llm", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
@pytest.fixture(autouse=True)
def _needs_llm() -> None:
    if LLM is None:
        missing("needs the llm CLI (pip install llm llm-echo: the test extra)")  # skipped, or failed under CI


@pytest.fixture
def llm_home(monkeypatch):
    base = Path(tempfile.mkdtemp(prefix="anvl.", dir="/tmp"))
    monkeypatch.setenv("LLM_USER_PATH", str(base / "llm"))
    monkeypatch.setenv("PATH", f"{Path(LLM).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run([LLM, "models", "default", "echo"], check=True, capture_output=True)
    subprocess.run([LLM, "earlier use"], check=True, capture_output=True)  # its database, as a user has it
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def cli(srv, *args: str, input: str = "") -> str:
    result = srv.run_cli(*args, input=input)
    assert result.returncode == 0, result.stderr + srv.trace_tail()
    return result.stdout


def test_two_llm_sessions_keep_two_conversations(llm_home):
    srv = start_server(llm_home)
    try:
        for name in ("a", "b"):
            cli(srv, "write", "agent/ctl", f"new llm /tmp name={name}\n")
        for turn in (1, 2):
            for name in ("a", "b"):  # both at once: their first turns must not take each other's id
                cli(srv, "write", f"agent/{name}/in", input=f"{name} says {turn}\n")
            for name in ("a", "b"):
                assert cli(srv, "read", f"agent/{name}/wait") == "await\n", cli(srv, "read", f"agent/{name}/log")
        assert json.loads(cli(srv, "read", "agent/a/out"))["prompt"].strip() == "a says 2"  # echo answers its prompt
    finally:
        srv.stop()
    logs = json.loads(subprocess.run([LLM, "logs", "list", "--json", "-n", "0"], check=True,
                                     capture_output=True, text=True).stdout)
    conversations: dict[str, list[str]] = {}
    for entry in (entry for entry in logs if entry["prompt"] != "earlier use"):
        conversations.setdefault(entry["conversation_id"], []).append(entry["prompt"].strip())
    assert sorted(sorted(prompts) for prompts in conversations.values()) == [
        ["a says 1", "a says 2"], ["b says 1", "b says 2"]], conversations
