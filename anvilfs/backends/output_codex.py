"""Reading `codex exec --json` (output_format "codex-json"), as codex 0.171 prints it.

Its events, one JSON object a line:

    thread.started {thread_id}          the conversation's id (a resume prints the same): conversation()
    turn.started
    item.started / item.updated / item.completed {item}
        agent_message {text}            a message: the turn's answer is the last one, as plain
                                        `codex exec` prints it (text and a newline)
        reasoning {text}                its reasoning summary
        command_execution {command, exit_code, status}
        file_change {changes: [{path, kind}]}
        mcp_tool_call {server, tool, arguments}
        web_search {query}, todo_list {items}, error {message}
    turn.completed {usage}              tokens the THREAD has spent so far (not the turn: measured,
                                        a resumed run's first report includes the earlier turns'),
                                        OpenAI's convention: input_tokens includes cached_input_tokens
                                        and cache_write_input_tokens, output_tokens the reasoning
    turn.failed {error: {message}}      the turn failed: failure()
    error {message}                     also said before turn.failed, and for a reconnect

A turn's usage is the difference between its turn.completed and the
thread's last one, which the agent keeps for it (memory, per thread). A turn
that failed reports none; what its requests spent counts in the next one
that completes. codex reports tokens only: no cost (cost_usd unknown).
"""

from __future__ import annotations

import json

from ..usage import Usage
from .output_formats import JsonLinesReader, brief as _cut

# codex's names for the running totals, and ours
_TOTALS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")


class CodexReader(JsonLinesReader):
    program = "codex"

    def __init__(self, output):
        super().__init__(output)
        self.memory: dict = {}  # {"thread": id, totals...}: the thread's totals at its last turn.completed
        self._thread = ""
        self._answer: str | None = None  # the last agent message
        self._failed = ""
        self._shown: set[str] = set()  # ids of the items written to stream already

    def conversation(self) -> str:
        return self._thread

    def failure(self) -> str:
        return self._failed

    def close(self) -> None:
        super().close()
        if self._answer is not None:
            self.output.answer(self._answer + "\n")
        else:
            self.output.answer("")  # plain codex printed nothing on stdout either

    def event(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            self._thread = str(event.get("thread_id") or "")
            self.output.note(f"codex thread {self._thread}")  # the transcript says which, as its stderr header did
        elif kind in ("item.started", "item.updated", "item.completed") and isinstance(event.get("item"), dict):
            self._item(event["item"], done=kind == "item.completed")
        elif kind == "turn.completed":
            self._usage(event.get("usage"))
        elif kind == "turn.failed":
            error = event.get("error")
            self._failed = str(error.get("message") if isinstance(error, dict) else error or "the turn failed")
        elif kind == "error":
            self.output.note(f"codex: {event.get('message')}")

    def _item(self, item: dict, done: bool) -> None:
        kind, key = item.get("type"), str(item.get("id", ""))
        if kind == "agent_message":
            if done:
                self._answer = str(item.get("text", ""))
                self.output.write(self._answer + "\n")
            return
        if kind == "reasoning":
            if done:
                self.output.write(f"[thinking {_cut(str(item.get('text', '')))}]\n")
            return
        line = _tool_line(item)
        if line and key not in self._shown:  # one line a call, as it starts (or ends, if it never said it started)
            self._shown.add(key)
            self.output.write(line + "\n")

    def _usage(self, usage) -> None:
        if not isinstance(usage, dict):
            return self.output.note("codex: turn.completed without usage: the turn's tokens are unknown")
        try:
            totals = {key: _count(usage.get(key, 0)) for key in _TOTALS}
        except ValueError as exc:
            return self.output.note(f"codex: cannot read turn.completed's usage {usage!r}: {exc}")
        before = self.memory if self.memory.get("thread") == self._thread else {}
        turn = {key: totals[key] - int(before.get(key, 0)) for key in _TOTALS}
        if any(value < 0 for value in turn.values()):  # the totals went back (a new thread under the same id?)
            turn = totals
        self.memory = {"thread": self._thread, **totals}
        fresh = turn["input_tokens"] - turn["cached_input_tokens"] - turn["cache_write_input_tokens"]
        self.output.usage(Usage(input_tokens=max(fresh, 0), output_tokens=turn["output_tokens"],
                                cache_read_tokens=turn["cached_input_tokens"],
                                cache_write_tokens=turn["cache_write_input_tokens"]))


def _count(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{value!r} is no count of tokens")
    return value


def _tool_line(item: dict) -> str:
    """A tool call as one line of `stream`: [tool NAME ARGUMENTS], cut; "" for an item that is none."""
    kind = item.get("type")
    if kind == "command_execution":
        return f"[tool shell {_cut(str(item.get('command', '')))}]"
    if kind == "mcp_tool_call":
        arguments = json.dumps(item.get("arguments"), ensure_ascii=False)
        return f"[tool {item.get('server', '')}.{item.get('tool', '')} {_cut(arguments)}]"
    if kind == "file_change":
        changes = item.get("changes") if isinstance(item.get("changes"), list) else []
        said = ", ".join(f"{c.get('kind', '')} {c.get('path', '')}" for c in changes if isinstance(c, dict))
        return f"[tool patch {_cut(said)}]"
    if kind == "web_search":
        return f"[tool web_search {_cut(str(item.get('query', '')))}]"
    if kind == "error":
        return f"[error {_cut(str(item.get('message', '')))}]"
    return ""

