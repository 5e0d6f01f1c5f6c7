"""A `bead new` or `mail` whose reply was lost after the server acted is not done again (found in review).

The window (the server saved the bead or the message, then died or the connection broke before the
read-back) cannot be hit on purpose with a real server, so this drives the steps over a small tree that
keeps what it was asked to make and loses the first reply, as such a server would.
"""

from __future__ import annotations

import json
import shlex
import types

from conductor import beadsteps
from conductor.access import Access
from conductor.lanes import At
from conductor.model import BeadStep, MailStep
from conductor.tree import Unavailable


class ServerThatDiesAfterActing:
    """Beads and mail kept as a server keeps them; the first ctl's reply is lost after it acted."""

    where = "the test's server"

    def __init__(self):
        self.ctls: list[tuple[str, str]] = []
        self.beads: dict[str, tuple[str, str]] = {}  # id -> (title, description)
        self.inbox: dict[str, dict] = {}  # id -> message
        self.lose_next = True

    async def ctl(self, path: str, line: str) -> str:
        self.ctls.append((path, line))
        if path == "beads/ctl":
            _, title, _role, description, *_ = shlex.split(line.replace("''", "'\\''"))
            answer = f"b{len(self.beads) + 1}"
            self.beads[answer] = (title, description)
        else:
            answer = str(len(self.inbox) + 1)
            self.inbox[answer] = {**json.loads(line), "from": path.split("/")[0], "id": answer}
        if self.lose_next:
            self.lose_next = False
            raise Unavailable("the server closed the connection")
        return answer

    async def read(self, path: str) -> bytes:
        if path == "beads/list":
            return "".join(f"{i} pending dev - {t}\n" for i, (t, _) in self.beads.items()).encode()
        if path.startswith("beads/") and path.endswith("/description"):
            return self.beads[path.split("/")[1]][1].encode()
        if "/inbox/" in path:
            return json.dumps(self.inbox[path.rsplit("/", 1)[1].removesuffix(".json")]).encode()
        raise AssertionError(f"unexpected read of {path}")

    async def write(self, path: str, data: bytes) -> None:
        if path.endswith("/description"):
            bead = path.split("/")[1]
            self.beads[bead] = (self.beads[bead][0], data.decode())

    async def ls(self, path: str) -> list[str]:
        return [f"{i}.json" for i in self.inbox] if path.endswith("/inbox") else []


class Record:
    def __init__(self):
        self.pending_steps: dict[str, dict] = {}

    def pending(self, key):
        return self.pending_steps.get(key)

    async def begin(self, key, intent):
        self.pending_steps[key] = intent


def engine(tree):
    async def render(text, at):
        return text
    return types.SimpleNamespace(access=Access(tree, retry_for=5, say=lambda text: None), bead=lambda ref, at: ref,
                                 journal=Record(), marker=lambda step, at: f"[conductor wf run r1 step {step}]",
                                 render=render)


async def test_a_bead_whose_reply_was_lost_is_found_not_made_again(autojump_clock):
    tree = ServerThatDiesAfterActing()
    step = BeadStep(kind="bead", id="mk", action="new", title="fix the parser", role="dev")
    result = await beadsteps.run(engine(tree), step, "mk", At())
    assert [path for path, _ in tree.ctls] == ["beads/ctl"], f"bead new sent {len(tree.ctls)} times: {tree.ctls}"
    assert result == {"bead": "b1"} and list(tree.beads) == ["b1"]


async def test_mail_whose_reply_was_lost_is_found_not_sent_again(autojump_clock):
    tree = ServerThatDiesAfterActing()
    step = MailStep(kind="mail", id="m", sender="review1", to="human", type="REVIEW_REQUEST", subject="look")
    result = await beadsteps.run(engine(tree), step, "m", At())
    assert len(tree.ctls) == 1, f"mail sent {len(tree.ctls)} times: {tree.ctls}"
    assert result == {"mail": "1"}
