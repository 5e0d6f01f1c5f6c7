"""Reading Gemini CLI's `--output-format stream-json` (output_format "gemini-json"), as 0.61 prints it.

Its events, one JSON object a line:

    init {session_id, model}
    message {role: "user", content}             the prompt, echoed
    message {role: "assistant", content, delta} the answer's text as it comes
    tool_use {tool_name, tool_id, parameters}    a call, before it runs
    tool_result {tool_id, status, error?}
    error {severity, message}                    a warning (a loop detected) or an error
    result {status: "success"|"error", error?: {type, message}, stats}

The answer for `out` is what the plain (text) output prints: the assistant's
text, a newline made sure of before the tools of a response run and at the
end. A failed turn's result has the error: failure() (the API's own text,
e.g. "[API Error: {...}]"); a CLI that stops before any result (an untrusted
folder, a failed resume) says why on stderr, as before.

stats count this run's model calls (every model's: a routing classifier's
too), summed: input_tokens the prompts (cached ones included), cached those
read from the cache, output_tokens the candidates. Thoughts are not among
them, only in total_tokens (total = prompt + candidates + thoughts + tool-use
prompts): what the model wrote is taken as total_tokens - input_tokens, which
also counts the rare tool-use prompt tokens (Gemini's server-side tools; the
CLI's own tools use none). Gemini CLI reports no cost.
"""

from __future__ import annotations

import json

from ..usage import Usage
from .output_formats import JsonLinesReader, brief


class GeminiReader(JsonLinesReader):
    program = "gemini"

    def __init__(self, output):
        super().__init__(output)
        self._answer: list[str] = []
        self._answer_open = False  # the answer's last line has not ended
        self._stream_open = False  # nor the last line written to stream
        self._failed = ""

    def failure(self) -> str:
        return self._failed

    def close(self) -> None:
        super().close()
        self._end_line_of_answer()
        self.output.answer("".join(self._answer))

    def event(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            self._say(str(event.get("content") or ""))
        elif kind == "tool_use":
            self._end_line_of_answer()  # as the plain output does before the tools run
            self._line(f"[tool {event.get('tool_name', '')} "
                                 f"{brief(json.dumps(event.get('parameters'), ensure_ascii=False))}]")
        elif kind == "tool_result" and event.get("status") == "error":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            self._line(f"[tool failed: {brief(str(error.get('message', '')))}]")
        elif kind == "error":
            self._line(f"[{event.get('severity', 'error')}: {brief(str(event.get('message', '')))}]")
        elif kind == "result":
            self._result(event)

    def _result(self, event: dict) -> None:
        if event.get("status") != "success":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            self._failed = " ".join(str(error.get("message") or "the turn failed").split())
        stats = event.get("stats")
        if not isinstance(stats, dict):
            return self.output.note("gemini: its result has no stats: the turn's tokens are unknown")
        try:
            prompt, cached, candidates, total = (_count(stats, key) for key in
                                                 ("input_tokens", "cached", "output_tokens", "total_tokens"))
        except ValueError as exc:
            return self.output.note(f"gemini: cannot read its stats {stats!r}: {exc}")
        self.output.usage(Usage(input_tokens=max(prompt - cached, 0), cache_read_tokens=cached,
                                output_tokens=max(candidates, total - prompt)))

    def _say(self, text: str) -> None:
        if text:
            self._answer.append(text)
            self._answer_open = not text.endswith("\n")
            self._write(text)

    def _end_line_of_answer(self) -> None:
        if self._answer_open:
            self._answer.append("\n")
            self._answer_open = False

    def _write(self, text: str) -> None:
        if text:
            self.output.write(text)
            self._stream_open = not text.endswith("\n")

    def _line(self, line: str) -> None:
        """A line of its own on `stream`, after the text written so far (which may not have ended one)."""
        if self._stream_open:
            self._write("\n")
        self._write(line + "\n")


def _count(stats: dict, key: str) -> int:
    value = stats.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key} {value!r} is no count of tokens")
    return value
