"""anvilfs: a 9P file server that presents LLM coding-agent sessions as files."""

__version__ = "0.1.0"
__all__ = ["__version__"]
