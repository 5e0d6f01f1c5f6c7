"""The Gemini API (POST /v1beta/models/MODEL:generateContent, :streamGenerateContent), as Gemini CLI calls it."""

from __future__ import annotations

import json
import re

from .base import Dialect, Failure, Handler, Hang, Reply, Request, Text, ToolCall, spent

_CALL = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):(generateContent|streamGenerateContent)$")
_COUNT = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):countTokens$")
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def _said(content: dict) -> list[tuple[str, str]]:
    """A content as (role, text) pairs: its text, function calls, function responses.

    Left out: thoughts, and the <session_context> part the CLI puts before the first prompt
    (date, OS, a listing of the folder), which no user said.
    """
    role = "assistant" if content.get("role") == "model" else "user"
    said, texts = [], []
    for part in content.get("parts", []):
        if "text" in part and not part.get("thought") and not part["text"].startswith("<session_context>"):
            texts.append(part["text"])
        elif "functionCall" in part:
            call = part["functionCall"]
            said.append(("assistant", f"tool {call.get('name')} {json.dumps(call.get('args'))}"))
        elif "functionResponse" in part:
            said.append(("tool", json.dumps(part["functionResponse"].get("response"))))
    return ([(role, "\n".join(texts))] if texts else []) + said


class Gemini(Dialect):
    name = "gemini"

    def handles(self, method: str, path: str) -> bool:
        return bool(_CALL.match(path))

    def parse(self, path: str, body: dict, headers: dict) -> Request:
        model, method = _CALL.match(path.split("?", 1)[0]).groups()
        messages = [pair for content in body.get("contents", []) for pair in _said(content)]
        tools = [declaration.get("name", "") for tool in body.get("tools", [])
                 for declaration in tool.get("functionDeclarations", [])]
        return Request(self.name, path, body, headers, messages, tools, model, method == "streamGenerateContent")

    def other(self, http: Handler, method: str, path: str) -> bool:
        if method == "POST" and _COUNT.match(path):
            http.send_json(200, {"totalTokens": 100})
            return True
        return False

    def answer(self, http: Handler, request: Request, reply: Reply) -> None:
        if isinstance(reply, Failure):
            status = _STATUS.get(reply.status, "UNKNOWN")
            return http.send_json(reply.status, {"error": {"code": reply.status, "message": reply.text(),
                                                           "status": status}})
        if isinstance(reply, Hang):
            http.start_events()  # a body begun, never ended: streamed or not, the CLI waits
            return http.hang()
        parts = _parts(_as_json(reply, request.body.get("generationConfig") or {}))
        request.usage = _usage()
        if not request.stream:
            return http.send_json(200, _response(parts, request.model, request.usage))
        http.start_events()
        pieces = _pieces(parts)
        for i, piece in enumerate(pieces):
            http.event(_response([piece], request.model, request.usage if i == len(pieces) - 1 else None))
        http.end_events()


def _as_json(reply: Text | ToolCall, config: dict) -> Text | ToolCall:
    """A text made an example of the schema asked for, its strings the text (the CLI's side calls: routing)."""
    if not isinstance(reply, Text) or config.get("responseMimeType") != "application/json":
        return reply
    return Text(json.dumps(_example(config.get("responseJsonSchema") or config.get("responseSchema") or {},
                                    reply.text)))


def _example(schema: dict, text: str):
    kind = str(schema.get("type", "")).lower()
    if kind == "object":
        return {key: _example(value, text) for key, value in schema.get("properties", {}).items()}
    if kind == "array":
        return [_example(schema.get("items", {}), text)]
    if schema.get("enum"):
        return schema["enum"][0]
    return {"integer": 1, "number": 1, "boolean": False}.get(kind, text)


def _parts(reply: Text | ToolCall) -> list[dict]:
    if isinstance(reply, Text):
        return [{"text": reply.text}]
    return ([{"text": reply.text}] if reply.text else []) + [{"functionCall": {"name": reply.name,
                                                                                "args": reply.arguments}}]


def _pieces(parts: list[dict]) -> list[dict]:
    """The parts as a stream's, a text in two halves: a stream, not one lump."""
    pieces = []
    for part in parts:
        if "text" in part:
            text = part["text"]
            pieces += [{"text": text[: len(text) // 2]}, {"text": text[len(text) // 2:]}]
        else:
            pieces.append(part)
    return pieces


def _usage() -> dict:
    """An answer's usageMetadata, different for each (base.spent): Gemini's convention, cached tokens counted
    inside promptTokenCount, thoughts apart from candidatesTokenCount."""
    n = spent()
    cached, thoughts = 10 * (n % 3), n % 4
    prompt, candidates = 100 + 7 * n + cached, 20 + n
    return {"promptTokenCount": prompt, "cachedContentTokenCount": cached, "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + candidates + thoughts}


def counted(requests: list[Request]) -> dict[str, int]:
    """What the answers to these requests reported, summed in anvilfs's usage keys (usage/model.py): thoughts
    are what the model wrote too."""
    sums = dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens"), 0)
    for usage in (request.usage for request in requests if request.usage):
        sums["input_tokens"] += usage["promptTokenCount"] - usage["cachedContentTokenCount"]
        sums["cache_read_tokens"] += usage["cachedContentTokenCount"]
        sums["output_tokens"] += usage["candidatesTokenCount"] + usage["thoughtsTokenCount"]
    return sums


def _response(parts: list[dict], model: str, usage: dict | None) -> dict:
    """A GenerateContentResponse; the last of a stream (usage given) says why it stopped and what it cost."""
    candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
    response = {"candidates": [candidate], "modelVersion": model}
    if usage is not None:
        candidate["finishReason"] = "STOP"
        response["usageMetadata"] = usage
    return response
