"""An OpenAI-compatible chat-completions endpoint, streamed (Ollama, vLLM, llama.cpp, OpenAI).

    [backends.local]
    kind = "openai"
    url = "http://127.0.0.1:11434/v1"
    model = "qwen2.5-coder"          # unless the session names one (model=)
    api_key_env = "OPENAI_API_KEY"   # optional: sent as "Authorization: Bearer ..."

The agent keeps the conversation (the configured system message, then the
user and assistant turns) and POSTs all of it to {url}/chat/completions with
"stream": true for every turn. The answer's pieces go to output.write() as the
server-sent events arrive; `data: [DONE]` ends the turn. A turn joins the
conversation only when it ended with [DONE]: a failed or interrupted turn
leaves it as it was. saved() holds the conversation, so a restarted server
carries on where it was.
"""

from __future__ import annotations

import os

from ..config.model import OpenAIBackendConfig
from ..sessions.backend import Agent, Backend, SessionInfo


class OpenAIBackend(Backend):
    kind = "openai"
    per_turn = True

    def __init__(self, name: str, config: OpenAIBackendConfig):
        super().__init__(name)
        self.config = config
        self.description = config.description or f"OpenAI-compatible endpoint {config.url}"

    def availability(self) -> str:
        return missing_key(self.config) or "ready"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        # httpx is imported here, not at the server's start (a slow import), for a kind few configure
        from .openai_agent import OpenAIAgent  # noqa: PLC0415

        return OpenAIAgent(self.name, self.config, session, saved)


def missing_key(config: OpenAIBackendConfig) -> str:
    """"" when the API key is there (or none is needed), else what to do."""
    if config.api_key_env and not os.environ.get(config.api_key_env):
        return f"missing: set ${config.api_key_env}"
    return ""
