"""Gemini CLI: the tools (a first cut, to be measured against gemini 0.61: no wiring yet)."""

from __future__ import annotations

from .agent_tools import ToolSetup, Wiring


def wire(setup: ToolSetup) -> Wiring:
    return Wiring()
