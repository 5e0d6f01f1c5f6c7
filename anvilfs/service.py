"""`anvilfs install-service`: a systemd user unit, so the server keeps running across logins.

The unit runs this very interpreter and package (`python -m anvilfs serve`,
with the serve options given), restarts it if it dies, and stops it with
SIGTERM (a clean stop). KillMode=process: stopping the service stops the
server only, never the tmux server its agents live in (they are adopted
when it starts again, as after any restart).

A user service does not get the login shell's environment, so the unit
carries what the server and its agents need from the shell that ran
`install-service`: NAMESPACE (the one the clients will look in), PATH
(where the agent CLIs are), XDG_CONFIG_HOME and XDG_STATE_HOME if set, and
the agents' API variables (keys, endpoints). It then holds secrets: it is
written 0600, and the command says which variables it carried.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

from .places import default_namespace, login_name

UNIT_NAME = "anvilfs.service"
_CARRIED = ("PATH", "XDG_CONFIG_HOME", "XDG_STATE_HOME")
# what agent CLIs and endpoints read: ANTHROPIC_API_KEY, OPENAI_BASE_URL, GEMINI_API_KEY, CLAUDE_CODE_..., ...
_AGENT_VARIABLE = re.compile(r"(ANTHROPIC|OPENAI|GEMINI|GOOGLE|CLAUDE|CODEX|OLLAMA|AIDER|OPENROUTER|MISTRAL|"
                             r"DEEPSEEK|GROQ|AZURE_OPENAI)_\w+|\w+_(API_KEY|API_BASE|BASE_URL|AUTH_TOKEN)")


def carried(environ: dict[str, str], serve_args: list[str]) -> tuple[dict[str, str], list[str]]:
    """The variables the unit sets, from `environ` (the installing shell's), and the names left out (a value
    with a line break cannot be written in a unit)."""
    named = _named_keys(serve_args)
    chosen = {"NAMESPACE": environ.get("NAMESPACE") or default_namespace()}  # where the clients will look
    chosen |= {name: value for name, value in sorted(environ.items())
               if name in _CARRIED or name in named or _AGENT_VARIABLE.fullmatch(name)}
    broken = sorted(name for name, value in chosen.items() if "\n" in value or "\r" in value)
    return {name: value for name, value in chosen.items() if name not in broken}, broken


def _named_keys(serve_args: list[str]) -> set[str]:
    """The variables the configuration the service will read names for its backends' keys (api_key_env),
    which may be named anything; none if it cannot be read (then `serve` says why, at its start)."""
    from .config import ConfigError, load_config  # noqa: PLC0415 - pydantic, for this command alone

    path = None
    for i, arg in enumerate(serve_args):
        if arg == "--config" and i + 1 < len(serve_args):
            path = serve_args[i + 1]
        elif arg.startswith("--config="):
            path = arg.removeprefix("--config=")
    try:
        backends = load_config(path).config.backends.values()
    except (ConfigError, OSError):
        return set()
    return {key for backend in backends if (key := getattr(backend, "api_key_env", ""))}


def _environment_line(name: str, value: str) -> str:
    """systemd's quoting: a double-quoted assignment, backslash and quote escaped, % doubled (a specifier)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'Environment="{name}={escaped}"\n'


def unit_text(serve_args: list[str], environment: dict[str, str] | None = None) -> str:
    command = shlex.join([sys.executable, "-m", "anvilfs", "serve", *serve_args]).replace("%", "%%")  # % starts a specifier
    settings = "".join(_environment_line(name, value) for name, value in (environment or {}).items())
    return f"""[Unit]
Description=anvilfs: LLM coding-agent sessions, beads and mail as 9P files
Documentation=file://{os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}/README.md

[Service]
{settings}ExecStart={command}
Restart=on-failure
RestartSec=2
KillMode=process
KillSignal=SIGTERM

[Install]
WantedBy=default.target
"""


def unit_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(base, "systemd", "user", UNIT_NAME)


def install(serve_args: list[str], *, print_only: bool) -> int:
    environment, broken = carried(dict(os.environ), serve_args)
    text = unit_text(serve_args, environment)
    names = ", ".join(environment)
    said = (f"the unit sets {names} from this shell (agents started by the service get them, and the "
            "values of keys are secrets)")
    left = f"; not carried, since a unit cannot hold a line break: {', '.join(broken)}" if broken else ""
    if print_only:
        sys.stdout.write(text)
        print(f"anvilfs: {said}{left}", file=sys.stderr)
        return 0
    path = unit_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    # API keys are in it: only you may read it, from its first byte on (an old .tmp of another mode too)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with open(fd, "w") as unit:
        os.fchmod(fd, 0o600)
        unit.write(text)
    os.replace(tmp, path)
    print(f"wrote {path}, mode 0600: {said}{left}. Install it again after changing one of them.\n"
          "Now run:\n"
          "  systemctl --user daemon-reload\n"
          "  systemctl --user enable --now anvilfs      # start it, and at every login\n"
          f"  loginctl enable-linger {login_name()}   # optional: keep it running when you are logged out\n"
          "  journalctl --user -u anvilfs -f            # its log")
    return 0
