"""The kinds of backend: per-turn command, tmux, OpenAI-compatible HTTP, simulated."""

from .command import CommandAgent, CommandBackend
from .openai import OpenAIAgent, OpenAIBackend
from .registry import build_backends, tmux_session_for
from .sim import SimAgent, SimBackend
from .tmux import TmuxAgent, TmuxBackend

__all__ = [
    "CommandAgent",
    "CommandBackend",
    "OpenAIAgent",
    "OpenAIBackend",
    "SimAgent",
    "SimBackend",
    "TmuxAgent",
    "TmuxBackend",
    "build_backends",
    "tmux_session_for",
]
