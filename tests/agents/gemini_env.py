"""Gemini CLI 0.61, headless, against the stub: its environment, its settings, its backend's config.

    home = GeminiHome(cwd)                  # trusts cwd; home.chats(cwd) once it has run there
    with agent_server(stub, "gemini", env=gemini_env(stub, scratch), home=home) as srv: ...

What it needs, as measured (each is something a user sets up too):

- ``security.auth.selectedType = "gemini-api-key"``: with GOOGLE_GEMINI_BASE_URL set and no type
  chosen it takes the "gateway" type and stops: "Invalid auth method selected." (exit 41)
- the session's cwd trusted (``trustedFolders.json``): headless, it refuses an untrusted folder
  (exit 55) and would not let auto_edit edit in one
- ``general.sessionRetention.enabled = false``: each ``--resume`` in a later minute than the
  conversation began leaves an empty session file with the same short id, and the next start of
  another session in that folder deletes both, the conversation with them (gemini-cli#27368)
- ``privacy.usageStatisticsEnabled = false``: else it sends usage statistics to play.googleapis.com
- ``general.maxAttempts = 1``: else a failing model call is tried 10 times, 5 to 30 s apart
- ``model.name``: with the default ("auto"), each turn first asks a classifier model to choose
  one (a second request; its failures are tried 5 times, whatever maxAttempts says)
"""

from __future__ import annotations

import json
from pathlib import Path

import tomlkit
from anvilfs.config import BUILTIN_BACKENDS

from stubs import StubModels

MODEL = "gemini-2.5-flash"


def gemini_env(stub: StubModels, scratch: Path) -> dict[str, str]:
    """The CLI pointed at the stub; its error reports (the conversation, in JSON) go to scratch, not /tmp."""
    return {"GOOGLE_GEMINI_BASE_URL": stub.url, "GEMINI_API_KEY": "dummy-key-for-the-stub", "TMPDIR": str(scratch)}


def settings(model: str | None = MODEL) -> dict:
    general = {"maxAttempts": 1, "sessionRetention": {"enabled": False}}
    values = {"security": {"auth": {"selectedType": "gemini-api-key"}},
              "privacy": {"usageStatisticsEnabled": False}, "general": general}
    return values | ({"model": {"name": model}} if model else {})


class GeminiHome:
    """``home=`` for agent_server: ~/.gemini/settings.json, and trustedFolders.json trusting ``trusted``."""

    def __init__(self, *trusted: Path, model: str | None = MODEL):
        self.trusted, self.model = trusted, model
        self.path: Path | None = None

    def __call__(self, home: Path) -> None:
        self.path = home
        config = home / ".gemini"
        config.mkdir()
        (config / "settings.json").write_text(json.dumps(settings(self.model), indent=2))
        trust = {str(folder.resolve()): "TRUST_FOLDER" for folder in self.trusted}
        (config / "trustedFolders.json").write_text(json.dumps(trust, indent=2))

    def chats(self, cwd: Path) -> Path:
        """Where the CLI keeps the conversations of the session run in cwd (one project per folder).

        A session with anvilfs's tools has a Gemini home of its own (STATE/agents/NAME/gemini, see
        anvilfs/backends/tools_gemini.py), one without them (mcp = false) this HOME's ~/.gemini.
        """
        assert self.path is not None, "the server has not been started with this home"
        homes = [self.path / ".gemini", *sorted(self.path.parent.glob("state/agents/*/gemini/.gemini"))]
        found = []
        for home in homes:
            registry = home / "projects.json"
            projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
            if str(cwd.resolve()) in projects:
                found.append(home / "tmp" / projects[str(cwd.resolve())] / "chats")
        assert len(found) == 1, f"not one Gemini home has a project for {cwd}: {found} (of {homes})"
        return found[0]


def gemini_config(**changes) -> str:
    """A config file whose [backends.gemini] is the built-in one with changes (e.g. timeout=20)."""
    return tomlkit.dumps({"backends": {"gemini": BUILTIN_BACKENDS["gemini"] | changes}})
