"""The OpenAI Responses API (POST /v1/responses), streamed as server-sent events, as the Codex CLI calls it.

A request's ``input`` is a list of items (codex sends no ``instructions``): messages
(role user/developer/assistant, content parts input_text/output_text),
function_call / custom_tool_call and their *_output, reasoning. A streamed
answer is response.created, per output item response.output_item.added,
its deltas, response.output_item.done, then response.completed.
"""

from __future__ import annotations

import itertools
import json

from .base import Dialect, Failure, Handler, Hang, Reply, Request, Text, ToolCall
from .openai_errors import send_openai_error

_ids = itertools.count(1)
# What codex puts in user messages itself (its environment, AGENTS.md, a marker for
# an interrupted turn), not said by the user: left out of the conversation.
_CONTEXT = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>", "<turn_aborted>")


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if part.get("type") in ("input_text", "output_text"))


def _said(item: dict) -> list[tuple[str, str]]:
    """An input item as (role, text) pairs; developer messages and the CLI's own context are left out."""
    kind = item.get("type", "message")
    if kind == "message":
        role, text = item.get("role", ""), _text_of(item.get("content"))
        if role not in ("user", "assistant") or text.lstrip().startswith(_CONTEXT):
            return []
        return [(role, text)]
    if kind == "function_call":
        return [("assistant", f"tool {item.get('name')} {item.get('arguments')}")]
    if kind == "custom_tool_call":
        return [("assistant", f"tool {item.get('name')} {item.get('input')}")]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        return [("tool", output if isinstance(output, str) else json.dumps(output))]
    return []  # reasoning and the like


def _tool_name(tool: dict) -> str:
    return tool.get("name") or tool.get("type", "")


class OpenAIResponses(Dialect):
    name = "openai-responses"

    def handles(self, method: str, path: str) -> bool:
        return path.endswith("/responses")

    def parse(self, path: str, body: dict, headers: dict) -> Request:
        items = body.get("input", [])
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        messages = [pair for item in items for pair in _said(item)]
        tools = [_tool_name(tool) for tool in body.get("tools", [])]
        return Request(self.name, path, body, headers, messages, tools, body.get("model", ""), bool(body.get("stream")))

    def answer(self, http: Handler, request: Request, reply: Reply) -> None:
        if isinstance(reply, Failure):
            return send_openai_error(http, reply)
        if isinstance(reply, Hang):
            http.start_events()
            return http.hang()
        response_id = f"resp_stub{next(_ids)}"
        response = {"id": response_id, "object": "response", "model": request.model, "status": "in_progress",
                    "output": []}
        http.start_events()
        _event(http, "response.created", response=response)
        items = [_stream_item(http, index, item) for index, item in enumerate(_items(reply, _custom(request)))]
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
        _event(http, "response.completed", response=response | {"status": "completed", "output": items, "usage": usage})
        http.end_events()


def _event(http: Handler, kind: str, **fields) -> None:
    http.event({"type": kind, **fields}, kind)


def _custom(request: Request) -> set[str]:
    """The names of the freeform tools offered (their call carries a text, not JSON arguments)."""
    return {tool.get("name") for tool in request.body.get("tools", []) if tool.get("type") == "custom"}


def _items(reply: Text | ToolCall, custom: set[str]) -> list[dict]:
    """The output items of a reply: a message, then the tool call (function or custom, as the tool was offered).

    A freeform tool's call is ToolCall(name, {"input": TEXT}).
    """
    text = reply.text
    items = [{"type": "message", "id": f"msg_stub{next(_ids)}", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": text, "annotations": []}]}] if text else []
    if isinstance(reply, ToolCall):
        call = {"id": f"fc_stub{next(_ids)}", "call_id": f"call_stub{next(_ids)}", "name": reply.name,
                "status": "completed"}
        if reply.name in custom:
            items.append(call | {"type": "custom_tool_call", "input": str(reply.arguments.get("input", ""))})
        else:
            items.append(call | {"type": "function_call", "arguments": json.dumps(reply.arguments)})
    return items


def _stream_item(http: Handler, index: int, item: dict) -> dict:
    """Stream one output item (a message's text in two deltas: a stream, not one lump); the item, done."""
    if item["type"] == "message":
        text = item["content"][0]["text"]
        _event(http, "response.output_item.added", output_index=index, item=item | {"status": "in_progress",
                                                                                      "content": []})
        for piece in (text[: len(text) // 2], text[len(text) // 2:]):
            _event(http, "response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                   delta=piece)
    else:
        _event(http, "response.output_item.added", output_index=index, item=item)
    _event(http, "response.output_item.done", output_index=index, item=item)
    return item
