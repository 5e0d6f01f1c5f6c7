"""Roles: prompt files in the configuration directory, read when used.

`roles/reviewer.md` (or .txt) makes the role `reviewer`; `new ... role=reviewer`
puts that file's text before the session's first prompt (and again after
`clear`). Files are read each time, so edits apply to the next session.
"""

from __future__ import annotations

from pathlib import Path


class Roles:
    SUFFIXES = (".md", ".txt")

    def __init__(self, directory: Path):
        self.directory = directory

    def __call__(self) -> dict[str, str]:
        """Role name -> prompt text."""
        roles = {}
        try:
            files = sorted(self.directory.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return roles
        for path in files:
            if path.suffix in self.SUFFIXES and path.is_file():
                try:
                    roles[path.stem] = path.read_text().strip()
                except (OSError, UnicodeDecodeError):
                    continue  # unreadable: not offered
        return roles
