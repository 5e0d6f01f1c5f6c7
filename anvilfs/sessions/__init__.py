"""Agent sessions: states, backends, and the manager that runs them (no 9P here)."""

from .backend import Agent, AgentExited, AgentFailed, Backend, SessionInfo, TurnFailed
from .manager import SessionLimits, Sessions
from .session import Prompt, Session, Turn
from .states import State

__all__ = [
    "Agent",
    "AgentExited",
    "AgentFailed",
    "Backend",
    "Prompt",
    "Session",
    "SessionInfo",
    "SessionLimits",
    "Sessions",
    "State",
    "Turn",
    "TurnFailed",
]
