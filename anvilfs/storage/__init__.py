"""Durable, private state on disk: the one storage module every domain uses.

    Database     one SQLite database (STATE/anvilfs.db): every change committed by
                 one writer thread, in groups, before the request is answered
    PrivateDir   a directory only this user can use; files in it are 0600,
                 written atomically and fsynced, never through a symbolic link
    TomlObjects  one TOML file per object, comments people add kept, written
                 by the database's writer thread
    GitHistory   the state directory as a git repository: changes committed
                 soon after, in groups, each with its message (pending in the database)
    StorageError a state directory that cannot or must not be used

The rule this serves: a write is answered only once what it changed is on
disk (SPEC §6, "Nothing answered is ever lost"). A domain queues its change
through the Database, and the request that made it is answered once it is
committed (anvilfs/waitable.py); nothing fsyncs in the event loop.
"""

from .database import Commit as DbCommit
from .database import Database
from .history import SCHEMA as HISTORY_SCHEMA
from .history import GitHistory
from .integrity import QuickCheck, damaged, damaged_text
from .objects import BrokenFile, TomlObjects
from .private import PrivateDir, StorageError, ensure_private_dir

__all__ = ["BrokenFile", "Database", "DbCommit", "GitHistory", "HISTORY_SCHEMA", "PrivateDir", "StorageError",
           "QuickCheck", "damaged", "damaged_text",
           "TomlObjects", "ensure_private_dir"]
