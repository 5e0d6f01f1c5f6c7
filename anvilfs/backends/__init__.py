"""The kinds of backend: per-turn command, tmux, OpenAI-compatible HTTP, simulated, external (its owner is the agent)."""

from .command import CommandAgent, CommandBackend
from .external import ExternalAgent, ExternalBackend
from .openai import OpenAIBackend
from .registry import build_backends, tmux_session_for
from .sim import SimAgent, SimBackend
from .tmux import TmuxAgent, TmuxBackend

__all__ = [
    "CommandAgent",
    "CommandBackend",
    "ExternalAgent",
    "ExternalBackend",
    "OpenAIAgent",
    "OpenAIBackend",
    "SimAgent",
    "SimBackend",
    "TmuxAgent",
    "TmuxBackend",
    "build_backends",
    "tmux_session_for",
]


def __getattr__(name: str):
    if name == "OpenAIAgent":  # loads httpx: only when asked for (openai.py)
        from .openai_agent import OpenAIAgent  # noqa: PLC0415

        return OpenAIAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
