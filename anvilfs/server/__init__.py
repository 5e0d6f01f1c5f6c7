"""The trio 9P server: listeners, connections and request dispatch."""

from .connection import Connection
from .dispatch import Dispatcher, Limits
from ..places import default_namespace
from .listen import ListenError
from .serve import Server, ServerOptions, run_server

__all__ = ["Connection", "Dispatcher", "Limits", "ListenError", "Server", "ServerOptions", "default_namespace", "run_server"]
