"""The kinds of backend: per-turn command, tmux, OpenAI-compatible HTTP, simulated."""

from .sim import SimAgent, SimBackend

__all__ = ["SimAgent", "SimBackend"]
