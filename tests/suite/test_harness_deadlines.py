"""The harness's waits end: a wait that nothing ends fails, saying what it awaited.

Under autojump_clock the deadlines are virtual, so each of these fails at once.
"""

from __future__ import annotations

import pytest
import trio

from harness.apps import until
from harness.deadlines import within
from harness.transcript import served


async def test_within_names_what_was_awaited(autojump_clock):
    with pytest.raises(AssertionError, match=r"timed out after 5s waiting for the moon"):
        with within(5, "the moon"):
            await trio.sleep_forever()


async def test_until_fails_naming_its_predicate(autojump_clock):
    never = []
    with pytest.raises(AssertionError, match=r"timed out after 1s waiting for .*lambda: never"):
        await until(lambda: never, timeout=1)  # the default, 30 s, is 30000 polls of the autojump clock
    with pytest.raises(AssertionError, match=r"timed out after 2s waiting for the list to fill"):
        await until(lambda: never, "the list to fill", timeout=2)


async def test_a_reply_that_never_comes_fails_naming_the_line_expected(autojump_clock):
    async with served() as (app, [peer]):
        with pytest.raises(AssertionError, match=r"waiting for 'Rversion tag 65535 \*' from the server"):
            await peer.play("< Rversion tag 65535 *")  # nothing was sent: nothing comes


async def test_closed_fails_while_the_server_keeps_the_connection(autojump_clock):
    async with served() as (app, [peer]):
        with pytest.raises(AssertionError, match="waiting for the server to close the connection"):
            await peer.closed()
