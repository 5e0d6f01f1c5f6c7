"""Reading `claude -p --output-format stream-json --verbose --include-partial-messages` ("claude-json").

As Claude Code 2.1.332 prints it (tests/fixtures/claude-stream-json has real runs), one JSON object a line:

    system {subtype: init | status ...}     nothing to show
    stream_event {event, api_message_id}    the API's own stream events, as they come (the partial
                                            messages): text deltas go to `stream` at once, a tool_use
                                            block becomes one line when it ends; message_start and
                                            message_delta carry the request's usage (the delta has the
                                            final output count)
    assistant {message}                     a message's content block, whole, after it streamed: shown
                                            only if its message did not stream (without the partial
                                            messages, or Claude Code's own "API Error: ..." message)
    user {message}                          tool results: not shown
    result {result, is_error, errors,       the run's end: `result` is the answer (plain -p prints it,
            usage, total_cost_usd,          with a newline if it has none); is_error: the API's text
            model_usage_since_last_result}  (`result`), or `errors` (a budget spent), is the failure

What the run spent is the result's model_usage_since_last_result, summed over its models: tokens and
costUSD of this run alone. Not total_cost_usd nor modelUsage: a resumed conversation restores its
earlier runs' cost (the transcript's cost-state), so those are the conversation's running totals
(measured: the second run of a conversation reported the first's cost plus its own). Not `usage`
either when the run failed: a run stopped by --max-budget-usd reports zeros there, its requests spent.
A run that ends with no result (killed, interrupted) reports the tokens of the requests it streamed
(message_start/message_delta), its cost unknown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from ..sessions.backend import Output
from ..usage import Usage
from .output_formats import JsonLinesReader, brief

TOOL_INPUT_KEEP = 4096  # characters of a tool call's streamed input kept: the line shows far fewer
# Claude Code's per-model keys, and the API's per-request ones, for our four kinds of tokens
_MODEL_KEYS = {"input_tokens": "inputTokens", "output_tokens": "outputTokens",
               "cache_read_tokens": "cacheReadInputTokens", "cache_write_tokens": "cacheCreationInputTokens"}
_API_KEYS = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
             "cache_read_tokens": "cache_read_input_tokens", "cache_write_tokens": "cache_creation_input_tokens"}


class ClaudeReader(JsonLinesReader):
    program = "claude"

    def __init__(self, output: Output):
        super().__init__(output)
        self._line_start = True  # what was written to stream ends a line
        self._tools: dict[int, tuple[str, list[str]]] = {}  # a streaming tool_use block: its name, input so far
        self._requests: dict[str, dict] = {}  # each streamed message's usage, by its id (latest figures win)
        self._streaming = ""  # the id of the message streaming now
        self._result: dict | None = None
        self._failed = ""

    def failure(self) -> str:
        return self._failed

    def close(self) -> None:
        super().close()
        if self._result is None and self._requests:
            self._report(lambda: Usage(**api_tokens(self._requests.values())), "the requests it streamed")
            self.output.note(f"claude ended without its result: what it spent is counted from the "
                             f"{len(self._requests)} request(s) it streamed; its cost is unknown")

    def event(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "stream_event" and isinstance(event.get("event"), dict):
            self._stream(event["event"], str(event.get("api_message_id") or ""))
        elif kind == "assistant" and isinstance(event.get("message"), dict):
            self._message(event["message"])
        elif kind == "result":
            self._end(event)

    # ------------------------------------------------------------ as it comes

    def _stream(self, event: dict, message: str) -> None:
        kind, index = event.get("type"), event.get("index")
        if kind == "message_start":
            started = event.get("message") or {}
            self._streaming = str(started.get("id") or message or len(self._requests))
            self._requests[self._streaming] = dict(started.get("usage") or {})
        elif kind == "message_delta" and isinstance(event.get("usage"), dict):  # of the message that started last
            self._requests.setdefault(message or self._streaming, {}).update(event["usage"])
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._tools[index] = (str(block.get("name", "?")), [])
        elif kind == "content_block_delta":
            self._delta(index, event.get("delta") or {})
        elif kind == "content_block_stop" and index in self._tools:
            name, pieces = self._tools.pop(index)
            self._tool_line(name, "".join(pieces))
        elif kind == "message_stop":
            self._finish_line()

    def _delta(self, index, delta: dict) -> None:
        if delta.get("type") == "text_delta":
            self._write(str(delta.get("text", "")))
        elif delta.get("type") == "input_json_delta" and index in self._tools:
            pieces = self._tools[index][1]
            if sum(map(len, pieces)) < TOOL_INPUT_KEEP:
                pieces.append(str(delta.get("partial_json", ""))[:TOOL_INPUT_KEEP])

    def _message(self, message: dict) -> None:
        """A whole content block: shown unless its message streamed (then it was shown as it came)."""
        if str(message.get("id", "")) in self._requests:
            return
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                self._write(str(block.get("text", "")))
                self._finish_line()
            elif block.get("type") == "tool_use":
                self._tool_line(str(block.get("name", "?")), json.dumps(block.get("input"), ensure_ascii=False))

    def _tool_line(self, name: str, arguments: str) -> None:
        try:  # the streamed input is JSON text, spaced as the model wrote it: shown compact
            arguments = json.dumps(json.loads(arguments), ensure_ascii=False)
        except ValueError:
            pass  # cut at TOOL_INPUT_KEEP, or not JSON: shown as it came
        self._finish_line()
        self._write(f"[tool {name} {brief(arguments)}]\n")

    def _write(self, text: str) -> None:
        if text:
            self.output.write(text)
            self._line_start = text.endswith("\n")

    def _finish_line(self) -> None:
        if not self._line_start:
            self._write("\n")

    # ------------------------------------------------------------ the end

    def _end(self, result: dict) -> None:
        self._result = result
        self._finish_line()
        text = result.get("result")
        if result.get("is_error"):
            errors = [str(error) for error in result.get("errors") or [] if error]
            self._failed = (str(text or "").strip() or "; ".join(errors)
                            or f"claude ended the turn in error ({result.get('subtype', 'no reason given')})")
        elif isinstance(text, str):
            self.output.answer(text if text.endswith("\n") else text + "\n")  # as plain -p prints it
        spent = result.get("model_usage_since_last_result")
        if isinstance(spent, dict):
            models = [figures for figures in spent.values() if isinstance(figures, dict)]
            costs = [figures.get("costUSD") for figures in models]
            cost = sum(costs) if all(isinstance(c, (int, float)) for c in costs) else None
            self._report(lambda: Usage(**_sum(models, _MODEL_KEYS), cost_usd=cost), "model_usage_since_last_result")
        elif isinstance(result.get("usage"), dict):  # a CLI before that key: tokens only (total_cost_usd is
            self._report(lambda: Usage(**api_tokens([result["usage"]])), "usage")  # the conversation's, not the run's)

    def _report(self, make: Callable[[], Usage], where: str) -> None:
        try:
            usage = make()
        except (TypeError, ValueError) as exc:
            return self.output.note(f"claude: cannot read what the turn spent from its {where}: {exc}")
        self.output.usage(usage)


def api_tokens(reports: Iterable[dict]) -> dict[str, int]:
    """Our four token counts summed over usage reports of the Anthropic API (a request's `usage`)."""
    return _sum(reports, _API_KEYS)


def _sum(reports: Iterable[dict], keys: dict[str, str]) -> dict[str, int]:
    """Our four token counts summed over reports (dicts in the keys given); a count that is no whole number
    >= 0 raises ValueError (Usage's own check), naming it."""
    reports = list(reports)
    totals = {}
    for ours, theirs in keys.items():
        values = [report.get(theirs, 0) or 0 for report in reports]
        for value in values:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{theirs} is {value!r}, not a count of tokens")
        totals[ours] = sum(values)
    return totals
