"""Glue between the domain (sessions, journals) and the synthetic tree."""

from .root import AgentTree

__all__ = ["AgentTree"]
