"""The agent of an OpenAI-compatible backend (openai.py): the conversation, POSTed and streamed.

Kept apart from the backend so that httpx loads only when such an agent is made.
"""

from __future__ import annotations

import json
import os

import httpx
import trio

from ..config.model import OpenAIBackendConfig
from ..sessions.backend import Agent, AgentFailed, Output, SessionInfo, TurnFailed
from ..usage import Usage
from .openai import missing_key

_SNIPPET = 300  # characters of a server's error body quoted in a failure


class OpenAIAgent(Agent):
    def __init__(self, backend: str, config: OpenAIBackendConfig, session: SessionInfo, saved: dict | None = None):
        self.backend = backend
        self.config = config
        self.session = session
        self.messages = self._fresh() + _restored(saved)
        self.url = f"{config.url}/chat/completions"
        self._client: httpx.AsyncClient | None = None

    def _fresh(self) -> list[dict]:
        return [{"role": "system", "content": self.config.system}] if self.config.system else []

    async def start(self) -> None:
        missing = missing_key(self.config)
        if missing:
            raise AgentFailed(f"backend {self.backend}: {missing}")

    async def turn(self, prompt: str, output: Output) -> None:
        model = self.session.model or self.config.model
        if not model:
            raise TurnFailed(f"no model: make the session with model=NAME, or set model in [backends.{self.backend}]")
        messages = [*self.messages, {"role": "user", "content": prompt}]
        # include_usage: a last chunk says what the request spent (OpenAI, Ollama, vLLM, llama.cpp send it)
        body = {"model": model, "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
        answer = await self._post(body, output)
        self.messages = [*messages, {"role": "assistant", "content": answer}]

    async def _post(self, body: dict, output: Output) -> str:
        try:
            async with self._http().stream("POST", self.url, json=body, headers=self._headers()) as response:
                if response.status_code != 200:
                    raise TurnFailed(await _status_failure(self.url, response))
                return await self._read_answer(response, output)
        except httpx.TimeoutException as exc:
            raise TurnFailed(f"{self.url}: no answer within {self.config.timeout:g}s ({type(exc).__name__})") from exc
        except httpx.ConnectError as exc:
            raise TurnFailed(f"cannot connect to {self.url}: {exc}") from exc
        except httpx.HTTPError as exc:
            raise TurnFailed(f"request to {self.url} failed: {type(exc).__name__}: {exc}") from exc

    async def _read_answer(self, response: httpx.Response, output: Output) -> str:
        """The answer's text, written to output piece by piece; TurnFailed unless [DONE] came."""
        pieces: list[str] = []
        try:
            async for line in response.aiter_lines():
                data = _data(line)
                if data == "[DONE]":
                    return "".join(pieces)
                event = _event(self.url, data) if data is not None else {}
                if "usage" in event and event["usage"] is not None:  # vLLM sends "usage": null on every chunk
                    _report_usage(self.url, event["usage"], output)
                piece = _piece(event)
                if piece:
                    pieces.append(piece)
                    output.write(piece)
        except httpx.TimeoutException as exc:
            raise TurnFailed(_dropped(self.url, pieces, f"nothing came for {self.config.timeout:g}s")) from exc
        except httpx.TransportError as exc:
            raise TurnFailed(_dropped(self.url, pieces, f"{type(exc).__name__}: {exc}")) from exc
        raise TurnFailed(_dropped(self.url, pieces, "the server closed it without data: [DONE]"))

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.config.timeout)
        return self._client

    def _headers(self) -> dict[str, str]:
        missing = missing_key(self.config)
        if missing:
            raise TurnFailed(f"backend {self.backend}: {missing}")
        if not self.config.api_key_env:
            return {}
        return {"Authorization": f"Bearer {os.environ[self.config.api_key_env]}"}

    def clear(self) -> None:
        self.messages = self._fresh()

    def saved(self) -> dict:
        return {"messages": [dict(m) for m in self.messages if m["role"] != "system"]}

    async def kill(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with trio.CancelScope(shield=True):
                await client.aclose()


def _restored(saved: dict | None) -> list[dict]:
    """The user/assistant turns of a saved conversation (the system message comes from the config)."""
    kept = []
    for message in (saved or {}).get("messages", []):
        if isinstance(message, dict) and message.get("role") in ("user", "assistant"):
            if isinstance(message.get("content"), str):
                kept.append({"role": message["role"], "content": message["content"]})
    return kept


async def _status_failure(url: str, response: httpx.Response) -> str:
    await response.aread()
    return f"{url} answered HTTP {response.status_code}: {_error_text(response)}"


def _error_text(response: httpx.Response) -> str:
    """The server's own error message if its body has one, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    text = _message(body.get("error")) if isinstance(body, dict) else ""
    return (text or response.text).strip()[:_SNIPPET] or "(empty body)"


def _message(error: object) -> str:
    """An error's text: OpenAI's {"message": ...} or Ollama's plain string."""
    if isinstance(error, dict):
        error = error.get("message")
    return error if isinstance(error, str) else ""


def _dropped(url: str, pieces: list[str], why: str) -> str:
    return f"stream dropped after {sum(map(len, pieces))} characters from {url} ({why})"


def _data(line: str) -> str | None:
    """The payload of an SSE `data:` line; None for comments, blank lines and other fields."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()


def _event(url: str, data: str) -> dict:
    """A chat.completion.chunk; TurnFailed for an error event, or one that is no JSON object."""
    try:
        event = json.loads(data)
    except ValueError:
        raise TurnFailed(f"{url} sent an event that is not JSON: {data[:_SNIPPET]!r}") from None
    if not isinstance(event, dict):
        raise TurnFailed(f"{url} sent an event that is not a JSON object: {data[:_SNIPPET]!r}")
    if "error" in event:
        raise TurnFailed(f"{url} reported an error mid-answer: {_message(event['error']) or event['error']}")
    return event


def _report_usage(url: str, usage: object, output: Output) -> None:
    """A response's usage (OpenAI's: cached tokens inside prompt_tokens) as the turn's; a note if unreadable."""
    try:
        prompt, completion = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
        cached = _tokens(details, "cached_tokens") if isinstance(details, dict) else 0
    except ValueError as exc:
        return output.note(f"{url} sent a usage that cannot be read, not counted: {exc}")
    output.usage(Usage(input_tokens=max(prompt - cached, 0), cache_read_tokens=cached, output_tokens=completion))


def _tokens(usage: object, key: str) -> int:
    value = usage.get(key, 0) if isinstance(usage, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key} is {value!r}, not a count of tokens (in {str(usage)[:_SNIPPET]})")
    return value


def _piece(event: dict) -> str:
    """The text a chat.completion.chunk adds (choices[0].delta.content)."""
    choices = event.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    delta = choice.get("delta") if isinstance(choice, dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""
