"""Configuration: backends, limits and restart policy, from TOML."""

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
    "RestartConfig",
    "SimBackendConfig",
    "TmuxBackendConfig",
    "default_config_dir",
    "load_config",
    "parse_config",
]
