"""Beads (git-backed work units) and convoys (groups of them): the rules of SPEC §6, no 9P here."""

from .board import Board, Who
from .checks import find_cycles
from .convoys import Convoys
from .graph import render as render_graph
from .model import Bead, Convoy, ConvoyStatus
from .states import Status, Verb

__all__ = ["Bead", "Board", "Convoy", "ConvoyStatus", "Convoys", "Status", "Verb", "Who", "find_cycles", "render_graph"]
