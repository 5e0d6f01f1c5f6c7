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
        where = ".".join(str(part) for part in error["loc"])
        lines.append(f"  {where}: {error['msg']}")
    return "\n".join(lines)


def parse_config(text: str, path: Path) -> Config:
    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    data = document.unwrap()
    backends = dict(BUILTIN_BACKENDS)
    backends.update(data.get("backends", {}))
    data["backends"] = backends
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path)) from None


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
