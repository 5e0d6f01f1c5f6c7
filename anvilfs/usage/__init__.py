"""What agents spend: a turn's tokens and money as its CLI reported them, summed per session, bead and convoy,
and the budgets that stop a session before it spends more (docs/usage.md).

This domain knows names only (a session's row and name, bead and convoy ids): sessions report a turn's Usage
through its Output, and the app level (spending.py) says which beads and convoys a turn counts to.
"""

from .model import Usage

__all__ = ["Usage"]
