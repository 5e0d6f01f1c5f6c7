"""The OpenAI Responses API (POST /v1/responses), streamed as server-sent events, as the Codex CLI calls it.

A request's ``input`` is a list of items (codex sends no ``instructions``): messages
(role user/developer/assistant, content parts input_text/output_text),
function_call / custom_tool_call and their *_output, reasoning. A streamed
answer is response.created, per output item response.output_item.added,
its deltas, response.output_item.done, then response.completed.

MCP tools come as codex 0.171 offers them. To a model without tool search
they are one ``namespace`` tool per server (``mcp__anvilfs`` holding
``claim``, ...), and a call names both: a function_call with ``namespace``
and ``name``. A model that searches (gpt-5.5) is offered ``tool_search``
(client-executed) instead; what it finds comes back in a
``tool_search_output`` item, offered from then on. In both cases the
request's ``tools`` name them ``mcp__anvilfs__claim``, and a script says
``ToolCall("mcp__anvilfs__claim", ...)``: if the tool is not offered but
``tool_search`` is, the stub first answers with a ``tool_search_call`` for
it; the search and its output stay out of ``Request.messages``, so the
script, asked again once codex has run the search, says the same call,
which then goes out with its namespace.
"""

from __future__ import annotations

import itertools
import json

from .base import Dialect, Failure, Handler, Hang, Reply, Request, Text, ToolCall, spent
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
        name = "__".join(filter(None, (item.get("namespace"), item.get("name"))))
        return [("assistant", f"tool {name} {item.get('arguments')}")]
    if kind == "custom_tool_call":
        return [("assistant", f"tool {item.get('name')} {item.get('input')}")]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")  # a text, or content parts (an MCP tool's: "Wall time: ...", then its text)
        if isinstance(output, list) and all(isinstance(part, dict) and "text" in part for part in output):
            output = "\n".join(part["text"] for part in output)
        return [("tool", output if isinstance(output, str) else json.dumps(output))]
    return []  # reasoning and the like


def _tool_name(tool: dict) -> str:
    return tool.get("name") or tool.get("type", "")


def _offered(body: dict) -> dict[str, tuple[str, str]]:
    """Every tool offered, as its qualified name -> (namespace or "", name): the request's tools, and the
    namespaces a tool search found earlier in the conversation (codex offers those from then on)."""
    tools = list(body.get("tools", []))
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if item.get("type") == "tool_search_output":
            tools += item.get("tools", [])
    offered = {}
    for tool in tools:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                offered[f"{tool['name']}__{inner.get('name')}"] = (tool["name"], inner.get("name", ""))
        else:
            offered[_tool_name(tool)] = ("", _tool_name(tool))
    return offered


def _searched(body: dict) -> bool:
    """Whether the input ends with a tool search's output (what the search found is offered now)."""
    items = body.get("input")
    return isinstance(items, list) and bool(items) and items[-1].get("type") == "tool_search_output"


class OpenAIResponses(Dialect):
    name = "openai-responses"

    def handles(self, method: str, path: str) -> bool:
        return path.endswith("/responses")

    def parse(self, path: str, body: dict, headers: dict) -> Request:
        items = body.get("input", [])
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        messages = [pair for item in items for pair in _said(item)]
        tools = list(_offered(body))
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
        items = [_stream_item(http, index, item) for index, item in enumerate(_items(reply, request))]
        request.usage = usage = _usage()
        _event(http, "response.completed", response=response | {"status": "completed", "output": items, "usage": usage})
        http.end_events()


def _usage() -> dict:
    """A response's usage, different for each (base.spent): OpenAI's convention, cached and cache-written tokens
    counted inside input_tokens, reasoning inside output_tokens."""
    n = spent()
    cached, written, reasoning = 10 * (n % 3), 3 * (n % 2), n % 4
    return {"input_tokens": 100 + 7 * n + cached + written,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
            "output_tokens": 20 + n, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": 120 + 8 * n + cached + written}


def counted(requests: list[Request]) -> dict[str, int]:
    """What the responses to these requests reported, summed in anvilfs's usage keys (usage/model.py)."""
    sums = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"), 0)
    for usage in (request.usage for request in requests if request.usage):
        details = usage["input_tokens_details"]
        sums["input_tokens"] += usage["input_tokens"] - details["cached_tokens"] - details["cache_write_tokens"]
        sums["cache_read_tokens"] += details["cached_tokens"]
        sums["cache_write_tokens"] += details["cache_write_tokens"]
        sums["output_tokens"] += usage["output_tokens"]
    return sums


def _event(http: Handler, kind: str, **fields) -> None:
    http.event({"type": kind, **fields}, kind)


def _custom(request: Request) -> set[str]:
    """The names of the freeform tools offered (their call carries a text, not JSON arguments)."""
    return {tool.get("name") for tool in request.body.get("tools", []) if tool.get("type") == "custom"}


def _message(text: str) -> dict:
    return {"type": "message", "id": f"msg_stub{next(_ids)}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _items(reply: Text | ToolCall, request: Request) -> list[dict]:
    """The output items of a reply: a message, then the tool call (function or custom, as the tool was offered;
    a tool search first for an MCP tool not offered yet).

    A freeform tool's call is ToolCall(name, {"input": TEXT}).
    """
    items = [_message(reply.text)] if reply.text else []
    if not isinstance(reply, ToolCall):
        return items
    offered = _offered(request.body)
    ids = {"id": f"fc_stub{next(_ids)}", "call_id": f"call_stub{next(_ids)}", "status": "completed"}
    if reply.name not in offered and "tool_search" in offered:
        if _searched(request.body):  # searched for it already, and it is still not offered
            return [_message(f"[stub {request.dialect}] tool_search did not find {reply.name}")]
        query = reply.name.removeprefix("mcp__").replace("__", " ")  # mcp__anvilfs__claim: "anvilfs claim"
        return items + [ids | {"type": "tool_search_call", "execution": "client",
                               "arguments": {"query": query, "limit": 8}}]
    namespace, name = offered.get(reply.name, ("", reply.name))
    call = ids | {"name": name} | ({"namespace": namespace} if namespace else {})
    if reply.name in _custom(request):
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
