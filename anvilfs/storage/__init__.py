"""Durable, private state on disk: the one storage module every domain uses.

    Database     one SQLite database (STATE/anvilfs.db): every change committed by
                 one writer thread, in groups, before the request is answered
    PrivateDir   a directory only this user can use; files in it are 0600,
                 written atomically and fsynced, never through a symbolic link
    AppendLog    a write-ahead log: records on disk before their request is
                 answered, one fdatasync per group, read back after a crash
    SaveQueue    background writes, coalesced, in stages, written by a worker
                 thread in groups, retried on failure
    RedoLog      the save queue's batches, one record and one fdatasync each,
                 the files fsynced at checkpoints, replayed after a crash
    TomlObjects  one TOML file per object, comments people add kept, written
                 by the database's writer thread
    GitHistory   the state directory as a git repository: changes committed
                 soon after, in groups, each with its message (pending in the database)
    StorageError a state directory that cannot or must not be used

The rule this serves: a write is answered only once what it changed is on
disk (SPEC §6, "Nothing answered is ever lost"). A domain either writes
through PrivateDir before it answers, or appends to an AppendLog before it
answers and saves the same change later, or records in the SaveQueue what
may safely wait.
"""

from .appendlog import AppendLog
from .database import Commit as DbCommit
from .database import Database
from .history import SCHEMA as HISTORY_SCHEMA
from .history import GitHistory
from .objects import BrokenFile, TomlObjects
from .private import PrivateDir, StorageError, ensure_private_dir
from .redolog import RedoLog
from .savequeue import Commit, Replace, SaveQueue

__all__ = ["AppendLog", "BrokenFile", "Commit", "Database", "DbCommit", "GitHistory", "HISTORY_SCHEMA", "PrivateDir",
           "RedoLog", "Replace", "SaveQueue", "StorageError", "TomlObjects", "ensure_private_dir"]
