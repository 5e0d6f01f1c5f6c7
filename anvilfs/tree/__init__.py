"""The synthetic file tree: nodes, file kinds and ctl command tables (no 9P here)."""

from .ctl import Args, Command, CommandTable
from .files import CollectFile, CtlFile, Cursor, SnapshotReads, StreamFile, TextFile, decoded_text
from .nodes import Caller, Directory, File, Handle, Node, qid_path
from .quoting import quote_word, split_words
from .snapshots import SnapshotBudget

__all__ = [
    "Args",
    "Caller",
    "CollectFile",
    "Command",
    "CommandTable",
    "CtlFile",
    "Cursor",
    "Directory",
    "File",
    "Handle",
    "Node",
    "SnapshotBudget",
    "SnapshotReads",
    "StreamFile",
    "TextFile",
    "decoded_text",
    "qid_path",
    "quote_word",
    "split_words",
]
