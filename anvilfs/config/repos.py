"""[repos."PATH"]: a repository's merge queue settings, the only place its gates, setup and push come from.

    [repos."/home/me/src/app"]
    mode = "rebase"                            # rebase | merge
    setup = [["uv", "sync"]]                   # argv lists, never shell text
    gates = [["make", "lint"], ["make", "test"]]
    gate_timeout = 600                         # seconds, for each setup command and gate
    push = false
    remote = "origin"
    push_timeout = 120

Nothing a client writes over 9P, and nothing in the repository's tree, adds
a command here: the server runs no command line that arrived over 9P.
Keys are absolute paths, normalised; one that exists at load is also found
by its real path (symlinks resolved then), as the wiring looks a repository
up by the real path of the REPO given at `new`.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

if TYPE_CHECKING:
    from ..worktrees.model import MergeConfig

KEYS = ("mode", "setup", "gates", "gate_timeout", "push", "remote", "push_timeout")
EXAMPLE_PATH = "/home/me/src/app"


def table(path: str) -> str:
    """A repository's table as it is written in the file."""
    return f"[repos.{json.dumps(path, ensure_ascii=False)}]"


def _argv_lists(value: object, key: str) -> tuple[tuple[str, ...], ...]:
    """setup and gates: each command an argv list run as it is, so a string (shell text) is refused."""
    example = f'{key} = [["make", "test"]]'
    if isinstance(value, str):
        raise ValueError(f"{json.dumps(value)} is shell text, which the server never runs: give a list of argv "
                         f"lists, e.g. {example}")
    if not isinstance(value, list):
        raise ValueError(f"give a list of argv lists, e.g. {example}")
    return tuple(_argv(argv, f"command {i}", example) for i, argv in enumerate(value, 1))


def _argv(argv: object, which: str, example: str) -> tuple[str, ...]:
    if isinstance(argv, str):
        raise ValueError(f"{which} is the string {json.dumps(argv)}: give each command as an argv list, "
                         f'["make", "test"], e.g. {example}; the server never runs shell text')
    if not isinstance(argv, list) or not argv:
        raise ValueError(f'{which}: give a non-empty argv list, the program first, e.g. ["make", "test"]')
    for word in argv:
        if not isinstance(word, str):
            raise ValueError(f'{which}: {json.dumps(word, default=str)} is not a string; every word is one, e.g. '
                             '["pytest", "-n", "4"]')
        if "\0" in word:
            raise ValueError(f"{which}: {json.dumps(word)} holds a NUL character, which no argument can carry")
    if not argv[0]:
        raise ValueError(f'{which}: the first word is empty; it names the program, e.g. ["make", "test"]')
    return tuple(argv)


class RepoConfig(BaseModel):
    """One [repos."PATH"] table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["rebase", "merge"] = "rebase"
    setup: tuple[tuple[str, ...], ...] = ()  # run in the merge worktree before the gates, and in a new worktree
    gates: tuple[tuple[str, ...], ...] = ()
    gate_timeout: float = Field(default=600.0, gt=0, allow_inf_nan=False, strict=True)  # each setup command, gate
    push: bool = Field(default=False, strict=True)
    remote: str = Field(default="origin", strict=True)
    push_timeout: float = Field(default=120.0, gt=0, allow_inf_nan=False, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: object) -> object:
        """Unknown keys named with the known ones (a misspelt `gates` would otherwise run no gate at all)."""
        if isinstance(data, RepoConfig):
            return data
        if not isinstance(data, dict):
            raise ValueError(f"give the repository's settings as a table, e.g. {table(EXAMPLE_PATH)} "
                             'gates = [["make", "test"]]')
        unknown = [key for key in data if key not in KEYS]
        if unknown:
            raise ValueError(f"unknown key {json.dumps(unknown[0])}; a repository's keys: {', '.join(KEYS)}")
        return data

    @field_validator("setup", "gates", mode="before")
    @classmethod
    def _commands(cls, value: object, info: ValidationInfo) -> tuple[tuple[str, ...], ...]:
        return _argv_lists(value, info.field_name)

    @field_validator("remote")
    @classmethod
    def _remote(cls, remote: str) -> str:
        if not remote or remote.startswith("-") or "\0" in remote:
            raise ValueError(f'{json.dumps(remote)}: give a remote\'s name or URL, not empty and not starting with '
                             '"-" (git would read it as an option), e.g. remote = "origin"')
        return remote

    def merge_config(self) -> MergeConfig:
        from ..worktrees.model import MergeConfig, MergeMode  # noqa: PLC0415 - the engine's package loads trio

        return MergeConfig(mode=MergeMode(self.mode), setup=self.setup, gates=self.gates,
                           gate_timeout=self.gate_timeout, push=self.push, remote=self.remote,
                           push_timeout=self.push_timeout)


def check_paths(tables: object) -> object:
    """The keys as written: each an absolute path (before the tables are read, so the error names the key)."""
    if not isinstance(tables, dict):
        raise ValueError(f"give each repository as a table of its own, {table(EXAMPLE_PATH)}")
    for path in tables:
        if not os.path.isabs(path):
            home = " (~ is not expanded)" if path.startswith("~") else ""
            raise ValueError(f"{table(path)} is not an absolute path{home}; name the git "
                             f"repository by its absolute path, e.g. {table(EXAMPLE_PATH)}")
    return tables


def real_path(path: str) -> str | None:
    """Where path leads when it exists now (symlinks resolved), else None."""
    try:
        return os.path.realpath(path, strict=True)
    except OSError:
        return None


def normalised(tables: dict[str, RepoConfig]) -> dict[str, RepoConfig]:
    """The tables by normalised path; two that name one repository (then or through a symlink) are refused."""
    by_path: dict[str, RepoConfig] = {}
    written: dict[str, str] = {}  # a normalised or real path -> the key that claimed it, as written
    for key, repo in tables.items():
        path = os.path.normpath(key)
        for name in dict.fromkeys(filter(None, (path, real_path(path)))):
            if name in written:
                raise ValueError(f"{table(written[name])} and {table(key)} name one repository ({name}): "
                                 "give it one table")
            written[name] = key
        by_path[path] = repo
    return by_path


def index(tables: dict[str, RepoConfig]) -> dict[str, RepoConfig]:
    """Each table by its normalised path and, if that exists now, by its real path too."""
    found = {}
    for path, repo in tables.items():
        found[path] = repo
        real = real_path(path)
        if real is not None:
            found[real] = repo
    return found
