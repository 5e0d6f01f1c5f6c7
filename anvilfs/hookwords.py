"""The words an agent's hook and the server share (text only: the client imports this, and nothing of the server).

The rules these words take part in are sessions/turns.py's table; the hook's
client (client/hook.py) and script (hooks/anvilfs-status) rely on the
outcomes named there. This module imports nothing, so `anvilfs hook` loads
none of the server to learn them.
"""

from __future__ import annotations

RUNNING = "running"  # written to status: the agent's turn began
AWAIT = "await"  # written to status: the turn ended with no answer to give (the pane's text is it)
HOOK_WORDS = (RUNNING, AWAIT)
# The refusal of an answer that belongs to no running turn (turns.py's NO_TURN and LATE): its turn is over, or
# the running turn has not said `running` yet. The hook keeps nothing then, and writes no await.
NO_TURN = "hand in an answer while its turn runs"
ANSWER_BUFFER = "anvilfs-answer-"  # + the pane's id: the tmux buffer where the hook keeps its answer for a next server
HOOK_OPTION = "@anvilfs-hook"  # pane option: a word the hook could not write to a server (hooks/anvilfs-status)
EXIT_KEEP = 1  # `anvilfs hook`: no server took the word for good; hooks/anvilfs-status keeps it in the pane
EXIT_REFUSED = 3  # `anvilfs hook`: the server refused the word; hooks/anvilfs-status keeps nothing
