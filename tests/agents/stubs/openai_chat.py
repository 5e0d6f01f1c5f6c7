"""The OpenAI Chat Completions API (POST /v1/chat/completions), streamed or not, as aider (litellm) calls it.

A streamed answer is server-sent events, ``data: {chat.completion.chunk}``
lines ending with ``data: [DONE]``; a plain one is one ``chat.completion``
object. Errors are OpenAI's ``{"error": {"message", "type", "param", "code"}}``.
System and developer messages are the CLI's instructions, not the
conversation, so they are left out of ``Request.messages``.
"""

from __future__ import annotations

import itertools
import json
import time

from .base import Dialect, Failure, Handler, Hang, Reply, Request, Text, ToolCall, spent
from .openai_errors import send_openai_error

_ids = itertools.count(1)


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") == "text")


def _said(message: dict) -> list[tuple[str, str]]:
    """A message as (role, text) pairs: user and assistant text, the assistant's tool calls, tool results."""
    role = message.get("role", "")
    if role == "tool":
        return [("tool", _text_of(message.get("content")))]
    if role not in ("user", "assistant"):
        return []
    text = _text_of(message.get("content"))
    said = [(role, text)] if text else []
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        said.append(("assistant", f"tool {function.get('name')} {function.get('arguments')}"))
    return said


class OpenAIChat(Dialect):
    name = "openai_chat"

    def handles(self, method: str, path: str) -> bool:
        return path in ("/v1/chat/completions", "/chat/completions")  # with or without /v1 in the base URL

    def parse(self, path: str, body: dict, headers: dict) -> Request:
        messages = [pair for message in body.get("messages", []) for pair in _said(message)]
        tools = [tool.get("function", {}).get("name", "") for tool in body.get("tools", [])]
        return Request(self.name, path, body, headers, messages, tools, body.get("model", ""), bool(body.get("stream")))

    def other(self, http: Handler, method: str, path: str) -> bool:
        if method == "GET" and path in ("/v1/models", "/models"):
            http.send_json(200, {"object": "list", "data": []})
            return True
        return False

    def answer(self, http: Handler, request: Request, reply: Reply) -> None:
        if isinstance(reply, Failure):
            return send_openai_error(http, reply)
        if isinstance(reply, Hang):
            if request.stream:
                http.start_events()
            else:
                http.send_response(200)
                http.send_header("Content-Type", "application/json")
                http.send_header("Content-Length", "1000")  # a body promised and never sent
                http.end_headers()
            return http.hang()
        head = {"id": f"chatcmpl-stub{next(_ids)}", "created": int(time.time()), "model": request.model}
        if not request.stream:
            request.usage = _usage()
            return http.send_json(200, head | {"object": "chat.completion", "usage": request.usage, "choices": [
                {"index": 0, "message": _message(reply), "finish_reason": _finish(reply), "logprobs": None}]})
        if (request.body.get("stream_options") or {}).get("include_usage"):  # else a stream says nothing of it
            request.usage = _usage()
        _stream(http, head | {"object": "chat.completion.chunk"}, reply, request.usage)


def _usage() -> dict:
    """An answer's usage, different for each (base.spent): OpenAI's convention, cached tokens counted inside
    prompt_tokens."""
    n = spent()
    cached = 10 * (n % 3)
    prompt, completion = 100 + 7 * n + cached, 20 + n
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def counted(requests: list[Request]) -> dict[str, int]:
    """What the answers to these requests reported, summed in anvilfs's usage keys (usage/model.py)."""
    sums = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens"), 0)
    for usage in (request.usage for request in requests if request.usage):
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        sums["input_tokens"] += usage["prompt_tokens"] - cached
        sums["cache_read_tokens"] += cached
        sums["output_tokens"] += usage["completion_tokens"]
    return sums


def _finish(reply: Text | ToolCall) -> str:
    return "tool_calls" if isinstance(reply, ToolCall) else "stop"


def _message(reply: Text | ToolCall) -> dict:
    if isinstance(reply, Text):
        return {"role": "assistant", "content": reply.text}
    call = {"id": f"call_stub{next(_ids)}", "type": "function",
            "function": {"name": reply.name, "arguments": json.dumps(reply.arguments)}}
    return {"role": "assistant", "content": reply.text or None, "tool_calls": [call]}


def _stream(http: Handler, head: dict, reply: Text | ToolCall, usage: dict) -> None:
    def chunk(delta: dict, finish: str | None = None) -> None:
        http.event(head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]})

    http.start_events()
    chunk({"role": "assistant", "content": ""})
    text = reply.text
    for piece in (text[: len(text) // 2], text[len(text) // 2:]):  # two deltas: a stream, not one lump
        if piece:
            chunk({"content": piece})
    if isinstance(reply, ToolCall):
        call = _message(reply)["tool_calls"][0]
        arguments = call["function"]["arguments"]
        chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                               "function": {"name": reply.name, "arguments": ""}}]})
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]})
    chunk({}, _finish(reply))
    if usage:
        http.event(head | {"choices": [], "usage": usage})
    http.event("[DONE]")
    http.end_events()
