"""Configuration: backends, limits, restart policy, mail and repositories' merge settings, from TOML."""

from .builtin import BUILTIN_BACKENDS
from .load import ConfigError, LoadedConfig, default_config_dir, load_config, parse_config
from .model import (
    BackendConfig,
    CommandBackendConfig,
    Config,
    ExternalBackendConfig,
    LimitsConfig,
    OpenAIBackendConfig,
    RestartConfig,
    SimBackendConfig,
    TmuxBackendConfig,
)
from .repos import RepoConfig

__all__ = [
    "BUILTIN_BACKENDS",
    "BackendConfig",
    "CommandBackendConfig",
    "Config",
    "ConfigError",
    "ExternalBackendConfig",
    "LimitsConfig",
    "LoadedConfig",
    "OpenAIBackendConfig",
    "RepoConfig",
    "RestartConfig",
    "SimBackendConfig",
    "TmuxBackendConfig",
    "default_config_dir",
    "load_config",
    "parse_config",
]
