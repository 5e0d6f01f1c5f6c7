"""The Anthropic Messages API (POST /v1/messages), streamed or not, as Claude Code calls it."""

from __future__ import annotations

import itertools
import json

from .base import Dialect, Failure, Handler, Hang, Reply, Request, Text, ToolCall

_ids = itertools.count(1)
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
                500: "api_error", 529: "overloaded_error"}


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content or [] if block.get("type") == "text")


def _said(message: dict) -> list[tuple[str, str]]:
    """A message as (role, text) pairs: its own text (system reminders left out), tool uses, tool results."""
    role, content = message.get("role", ""), message.get("content", "")
    if isinstance(content, str):
        return [(role, content)]
    said, texts = [], []
    for block in content:
        kind = block.get("type")
        if kind == "text" and not block.get("text", "").lstrip().startswith("<system-reminder>"):
            texts.append(block["text"])
        elif kind == "tool_use":
            said.append(("assistant", f"tool {block.get('name')} {json.dumps(block.get('input'))}"))
        elif kind == "tool_result":
            said.append(("tool", _text_of(block.get("content"))))
    return ([(role, "\n".join(texts))] if texts else []) + said


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
        message = {"id": f"msg_stub{next(_ids)}", "type": "message", "role": "assistant", "model": request.model,
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 100, "output_tokens": 1}}
        if not request.stream:
            return http.send_json(200, message | {"content": blocks, "stop_reason": stop,
                                                  "usage": {"input_tokens": 100, "output_tokens": 20}})
        http.start_events()
        http.event({"type": "message_start", "message": message}, "message_start")
        for index, block in enumerate(blocks):
            _stream_block(http, index, block)
        http.event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 20}}, "message_delta")
        http.event({"type": "message_stop"}, "message_stop")
        http.end_events()


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
