"""Stub model servers for the real agent CLIs (base.py says how they answer)."""

from __future__ import annotations

from .base import Dialect, Failure, Hang, Reply, Request, StubModels, Text, ToolCall, directives


def all_dialects() -> list[Dialect]:
    from .anthropic import Anthropic
    from .gemini import Gemini
    from .openai_chat import OpenAIChat
    from .openai_responses import OpenAIResponses

    return [Anthropic(), Gemini(), OpenAIChat(), OpenAIResponses()]


__all__ = ["Dialect", "Failure", "Hang", "Reply", "Request", "StubModels", "Text", "ToolCall", "all_dialects",
           "directives"]
