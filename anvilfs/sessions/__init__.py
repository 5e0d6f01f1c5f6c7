"""Agent sessions: states, backends, and the manager that runs them (no 9P here)."""

from .backend import Agent, AgentExited, AgentFailed, Backend, PromptNotSent, SessionInfo, TurnFailed
from .manager import RestartPolicy, SessionLimits, Sessions
from .options import SERVER_NAMES
from .session import Definition, Prompt, Session, Turn
from .store import SCHEMA as SESSIONS_SCHEMA
from .store import SessionStore
from .states import State

__all__ = [
    "Agent",
    "AgentExited",
    "AgentFailed",
    "Backend",
    "Definition",
    "Prompt",
    "PromptNotSent",
    "RestartPolicy",
    "SERVER_NAMES",
    "SESSIONS_SCHEMA",
    "Session",
    "SessionInfo",
    "SessionLimits",
    "SessionStore",
    "Sessions",
    "State",
    "Turn",
    "TurnFailed",
]
