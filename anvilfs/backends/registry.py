"""Backends from configuration: one Backend object per [backends.NAME] table."""

from __future__ import annotations

import hashlib

from ..config import Config, ConfigError
from .agent_tools import known_programs, wiring_for
from ..sessions import Backend
from .command import CommandBackend
from .external import ExternalBackend
from .openai import OpenAIBackend
from .sim import SimBackend
from .tmux import TmuxBackend


def tmux_session_for(namespace: str) -> str:
    """One tmux session per anvilfs namespace, named so `tmux attach -t NAME` finds it."""
    return "anvilfs-" + hashlib.blake2b(namespace.encode(), digest_size=4).hexdigest()


def build_backends(config: Config, *, tmux_session: str, tmux_socket: str | None = None) -> dict[str, Backend]:
    backends: dict[str, Backend] = {}
    for name, cfg in sorted(config.backends.items()):
        if getattr(cfg, "mcp", False) and wiring_for(cfg.argv[0]) is None:
            raise ConfigError(f"[backends.{name}] mcp = true: anvilfs knows how to give its tools to "
                              f"{', '.join(known_programs())}, and {cfg.argv[0]!r} is none of them; "
                              "write mcp = false, or leave it out")
        if cfg.kind == "command":
            backend: Backend = CommandBackend(name, cfg)
        elif cfg.kind == "tmux":
            backend = TmuxBackend(name, cfg, tmux_session=tmux_session, tmux_socket=tmux_socket)
        elif cfg.kind == "openai":
            backend = OpenAIBackend(name, cfg)
        elif cfg.kind == "external":
            backend = ExternalBackend(name)
        else:
            backend = SimBackend(name, step_delay=cfg.step_delay)
        backend.description = cfg.description or backend.description
        backends[name] = backend
    return backends
