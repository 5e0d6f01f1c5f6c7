"""Glue between the domain (sessions, journals) and the synthetic tree."""

from .root import ROOT_FILES, AgentTree

__all__ = ["ROOT_FILES", "AgentTree"]
