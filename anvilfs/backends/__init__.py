"""The kinds of backend: per-turn command, tmux, OpenAI-compatible HTTP, simulated, external (its owner is the agent)."""

from .command import CommandAgent, CommandBackend
from .external import ExternalAgent, ExternalBackend
from .openai import OpenAIAgent, OpenAIBackend
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
