"""The hook's script says what hookwords.py says: it cannot import it, so this test reads it."""

from __future__ import annotations

import pathlib
import re

from anvilfs import hookwords

SCRIPT = (pathlib.Path(__file__).parents[2] / "hooks" / "anvilfs-status").read_text()


def test_the_script_keeps_words_in_the_option_the_backend_reads():
    assert re.search(rf"set-option -p -t \"\$TMUX_PANE\" {re.escape(hookwords.HOOK_OPTION)} ", SCRIPT)


def test_the_script_takes_the_hook_words_and_acts_on_the_clients_exit_statuses():
    assert f"{'|'.join(hookwords.HOOK_WORDS)}) ;;" in SCRIPT
    assert f"{hookwords.EXIT_REFUSED}) exit 1 ;;  # the server is there and refused it" in SCRIPT
    assert hookwords.EXIT_KEEP == 1 and SCRIPT.rstrip().endswith(f'record "$1"\nexit {hookwords.EXIT_KEEP}')
