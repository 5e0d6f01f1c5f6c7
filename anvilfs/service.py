"""`anvilfs install-service`: a systemd user unit, so the server keeps running across logins.

The unit runs this very interpreter and package (`python -m anvilfs serve`,
with the serve options given), restarts it if it dies, and stops it with
SIGTERM (a clean stop). KillMode=process: stopping the service stops the
server only, never the tmux server its agents live in (they are adopted
when it starts again, as after any restart).
"""

from __future__ import annotations

import os
import shlex
import sys

from .places import login_name

UNIT_NAME = "anvilfs.service"


def unit_text(serve_args: list[str]) -> str:
    command = shlex.join([sys.executable, "-m", "anvilfs", "serve", *serve_args]).replace("%", "%%")  # % starts a specifier
    return f"""[Unit]
Description=anvilfs: LLM coding-agent sessions, beads and mail as 9P files
Documentation=file://{os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}/README.md

[Service]
ExecStart={command}
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
    text = unit_text(serve_args)
    if print_only:
        sys.stdout.write(text)
        return 0
    path = unit_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as unit:
        unit.write(text)
    os.replace(tmp, path)
    print(f"wrote {path}; now run:\n"
          "  systemctl --user daemon-reload\n"
          "  systemctl --user enable --now anvilfs      # start it, and at every login\n"
          f"  loginctl enable-linger {login_name()}   # optional: keep it running when you are logged out\n"
          "  journalctl --user -u anvilfs -f            # its log")
    return 0
