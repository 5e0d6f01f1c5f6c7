"""Reading the configuration: TOML by tomlkit, checked by pydantic, merged over the built-ins."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import ParseError

from .builtin import BUILTIN_BACKENDS
from .model import Config
from .repos import table as repo_table


class ConfigError(Exception):
    """The configuration cannot be used; the text says where and why."""


def default_config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "anvilfs"


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    path: Path  # the file read, or where it would be
    found: bool

    @property
    def directory(self) -> Path:
        return self.path.parent


def _explain(exc: ValidationError, path: Path) -> str:
    lines = [f"{path}: configuration is not valid:"]
    for error in exc.errors():
        lines.append(f"  {_where(error['loc'])}: {error['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def _where(loc: tuple) -> str:
    """The key an error is about, as the file names it: a repository's table by its path in quotes (a path's
    dots would read as more keys), `[repos."/src/app"] gates`."""
    if len(loc) >= 2 and loc[0] == "repos":
        key = ".".join(str(part) for part in loc[2:])
        return f"{repo_table(str(loc[1]))} {key}".rstrip()
    return ".".join(str(part) for part in loc)


def parse_config(text: str, path: Path) -> Config:
    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    data = document.unwrap()
    data["backends"] = _backends(data.get("backends", {}), path)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None


def _backends(tables: object, path: Path) -> dict:
    """The built-ins with the file's [backends.NAME] tables over them: a table replaces the built-in of its
    name whole, unless it says `extends = "BUILTIN"`: then it starts from that built-in's keys."""
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: backends: give each backend as a table of its own, [backends.NAME]")
    backends = dict(BUILTIN_BACKENDS)
    for name, table in tables.items():
        extends = isinstance(table, dict) and "extends" in table
        backends[name] = _extended(name, table, tables, path) if extends else table
    return backends


def _extended(name: str, table: dict, tables: dict, path: Path) -> dict:
    """A table's keys over the built-in it extends (and its `env` over the built-in's `env`).

    Built-ins only, whatever table of that name the file has: a chain of the file's own
    tables would be one more thing to read to know what a backend runs.
    """
    base_name = table["extends"]
    where = f"{path}: [backends.{name}] extends = {_toml(base_name)}"
    builtins = f"built-ins: {', '.join(BUILTIN_BACKENDS)}"
    if not isinstance(base_name, str):
        raise ConfigError(f'{where}: give the name of a built-in backend, e.g. extends = "claude"; {builtins}')
    if base_name not in BUILTIN_BACKENDS:
        why = (f"only a built-in can be extended, and {base_name} is a table of this file"
               if base_name in tables else "no built-in backend has that name")
        raise ConfigError(f"{where}: {why}; {builtins}")
    base = BUILTIN_BACKENDS[base_name]
    own = {key: value for key, value in table.items() if key != "extends"}
    if own.get("kind", base["kind"]) != base["kind"]:
        raise ConfigError(f"{where}: kind = {_toml(own['kind'])} is not {base_name}'s kind ({_toml(base['kind'])}); "
                          "a table that extends a built-in keeps its kind: leave kind out, or drop extends and "
                          "give every key")
    merged = base | own
    if isinstance(base.get("env"), dict) and isinstance(own.get("env"), dict):
        merged["env"] = base["env"] | own["env"]  # variables, each its own setting: yours are added
    return merged


def _toml(value: object) -> str:
    """A value as it is written in TOML, for an error that quotes the file."""
    if isinstance(value, dict):  # as it was written: a table would come out as lines of keys
        table = tomlkit.inline_table()
        table.update(value)
        return table.as_string()
    return tomlkit.item(value).as_string()


def load_config(path: str | os.PathLike | None = None) -> LoadedConfig:
    """The configuration at path (default $XDG_CONFIG_HOME/anvilfs/config.toml)."""
    explicit = path is not None
    file = Path(path) if explicit else default_config_dir() / "config.toml"
    try:
        text = file.read_text()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"{file}: no such file") from None
        return LoadedConfig(parse_config("", file), file, found=False)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from None
    return LoadedConfig(parse_config(text, file), file, found=True)
