"""A blocking 9P2000 client, plan9port-style name resolution, and the client commands.

Nothing here imports the server, the backends or trio: a client process
starts in the time Python and the protocol package take to load.
"""

from .address import AddressError, Target, dial, resolve
from .client import Client, ConnectionLost, ServerError
from .commands import COMMANDS, CommandError
from .credentials import attach_aname, attach_uname
from .protocol import ClientProtocol, Flushed, Reply

__all__ = ["AddressError", "COMMANDS", "Client", "ClientProtocol", "CommandError", "ConnectionLost", "Flushed", "Reply",
           "ServerError", "Target",
           "attach_aname", "attach_uname", "dial", "resolve"]
