"""The Anthropic Messages API (POST /v1/messages), streamed or not, as Claude Code calls it.

Each reply reports a usage of its own (_usage: input, output, cache read and cache write tokens that grow
with base.spent), recorded on its Request (in the API's keys): a test sums exactly what was reported.
"""

from __future__ import annotations

import itertools
import json

from .base import Dialect, Failure, Handler, Hang, Reply, Request, Text, ToolCall, spent

_ids = itertools.count(1)
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                500: "api_error", 529: "overloaded_error"}


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content or [] if block.get("type") == "text")


def _said(message: dict) -> list[tuple[str, str]]:
    """A message as (role, text) pairs, in the order of its blocks.

    Left out: system reminders, and messages of role "system" (Claude Code
    2.1.332 sends its environment description as one in the middle of the
    conversation; it is no one's turn). Each text block of a user message is
    a user text of its own: Claude Code sends a prompt whose turn failed and
    the next prompt as two blocks of one message, and the last is the prompt.
    """
    role, content = message.get("role", ""), message.get("content", "")
    if role == "system":
        return []
    if isinstance(content, str):
        return [(role, content)]
    said: list[tuple[str, str]] = []
    last = ""  # the kind of the block said last
    for block in content:
        kind, text = block.get("type"), block.get("text", "")
        if kind == "text" and text.lstrip().startswith("<system-reminder>"):
            continue
        if kind == "text" and role != "user" and last == "text":  # an answer's text blocks in a row are one text
            said[-1] = (role, said[-1][1] + "\n" + text)
        elif kind == "text":
            said.append((role, text))
        elif kind == "tool_use":
            said.append(("assistant", f"tool {block.get('name')} {json.dumps(block.get('input'))}"))
        elif kind == "tool_result":
            said.append(("tool", _text_of(block.get("content"))))
        last = kind
    return said


class Anthropic(Dialect):
    name = "anthropic"

    def handles(self, method: str, path: str) -> bool:
        return path == "/v1/messages"

    def parse(self, path: str, body: dict, headers: dict) -> Request:
        messages = [pair for message in body.get("messages", []) for pair in _said(message)]
        tools = [tool.get("name", "") for tool in body.get("tools", [])]
        return Request(self.name, path, body, headers, messages, tools, body.get("model", ""), bool(body.get("stream")))

    def other(self, http: Handler, method: str, path: str) -> bool:
        if method == "POST" and path == "/v1/messages/count_tokens":
            http.send_json(200, {"input_tokens": 100})
            return True
        return False

    def answer(self, http: Handler, request: Request, reply: Reply) -> None:
        if isinstance(reply, Failure):
            kind = _ERROR_TYPES.get(reply.status, "api_error")
            return http.send_json(reply.status, {"type": "error", "error": {"type": kind, "message": reply.text()}})
        if isinstance(reply, Hang):
            http.start_events()
            return http.hang()
        blocks = _blocks(reply)
        stop = "tool_use" if isinstance(reply, ToolCall) else "end_turn"
        usage = _usage(request)
        message = {"id": f"msg_stub{next(_ids)}", "type": "message", "role": "assistant", "model": request.model,
                   "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage | {"output_tokens": 1}}
        if not request.stream:
            return http.send_json(200, message | {"content": blocks, "stop_reason": stop, "usage": usage})
        http.start_events()
        http.event({"type": "message_start", "message": message}, "message_start")
        for index, block in enumerate(blocks):
            _stream_block(http, index, block)
        # as the API does: message_start has the prompt's figures, message_delta the output's final count
        http.event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta")
        http.event({"type": "message_stop"}, "message_stop")
        http.end_events()


def _usage(request: Request) -> dict[str, int]:
    """This reply's usage in the API's keys, different for every request (base.spent), recorded on the request:
    a test sums exactly what was reported for the requests it looks at. Anthropic's convention: input_tokens are
    the fresh ones, beside those read from and written to the cache."""
    n = spent()
    request.usage = {"input_tokens": 100 + n, "output_tokens": 20 + n, "cache_read_input_tokens": 1000 + 7 * n,
                     "cache_creation_input_tokens": 50 + 3 * n}
    return dict(request.usage)


def _blocks(reply: Text | ToolCall) -> list[dict]:
    if isinstance(reply, Text):
        return [{"type": "text", "text": reply.text}]
    blocks = [{"type": "text", "text": reply.text}] if reply.text else []
    return blocks + [{"type": "tool_use", "id": f"toolu_stub{next(_ids)}", "name": reply.name,
                      "input": reply.arguments}]


def _stream_block(http: Handler, index: int, block: dict) -> None:
    if block["type"] == "text":
        http.event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                   "content_block_start")
        text = block["text"]
        for piece in (text[: len(text) // 2], text[len(text) // 2:]):  # two deltas: a stream, not one lump
            http.event({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
                       "content_block_delta")
    else:
        http.event({"type": "content_block_start", "index": index,
                    "content_block": {**block, "input": {}}}, "content_block_start")
        http.event({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
                   "content_block_delta")
    http.event({"type": "content_block_stop", "index": index}, "content_block_stop")


def tool_results(request: Request) -> list[tuple[str, bool]]:
    """(text, is_error) of every tool_result block of the conversation, in order: a refusal the model sees has
    is_error set (Claude Code's own refusals, a permission's or an unknown tool's, and an MCP tool's error alike)."""
    results = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                results.append((_text_of(block.get("content")), bool(block.get("is_error"))))
    return results


def tool_schemas(request: Request) -> dict[str, dict]:
    """The tools the CLI offered in the request, by name: each as sent (name, description, input_schema)."""
    return {tool.get("name", ""): tool for tool in request.body.get("tools", [])}
