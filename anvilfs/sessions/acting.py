"""An agent acts as its own session: what a writer whose uname is a session's name may do to others.

An agent's tools and its shell path (`anvilfs write ...`, docs/bots.md)
attach as its session. Writes are checked against the writer's session:

    driving another session   its `in` (a prompt), its ctl (stop, kill, ...)    a conductor session only
    another's bead            complete, fail, unclaim, result, description,     a conductor session only
                              claim naming another session                      (fs/beads_dir.py)
    starting a session        agent/ctl new                                     a conductor session only, with
                                                                                 its cwd inside the conductor's
    mail from another         another participant's `mail`, human's included    never (mail_dir.py)

The writer is "an agent" when its uname names a session that is not
external: an external session's owner is a program outside anvilfs (a
conductor), which drives others by design. Any other uname (a person's
login name, a script's) is not restricted, as before. uname is
self-declared (SPEC §2): this keeps an agent from doing by mistake, or by a
model's whim, what its session was not made to do; it is no wall against
a hostile program on the same account.
"""

from __future__ import annotations

import os

from ..errors import InvalidRequest, NotPermitted
from .session import Session


def acting_agent(find, uname: str) -> Session | None:
    """The session whose agent UNAME is, if the rules of an agent apply to it (find: Sessions.find)."""
    session = find(uname) if uname else None
    if session is None or session.backend.owner_driven:
        return None
    return session


def is_worker(find, uname: str) -> bool:
    """Whether UNAME is an agent that is no conductor: it works only on what it holds (fs/beads_dir.py)."""
    agent = acting_agent(find, uname)
    return agent is not None and not agent.definition.conductor


def check_drive(find, uname: str, target: str, what: str) -> None:
    """NotPermitted when an agent that is no conductor writes TARGET's `in` or ctl."""
    agent = acting_agent(find, uname)
    if agent is None or agent.name == target or agent.definition.conductor:
        return
    raise NotPermitted(f"{what}: session {agent.name}'s agent acts on its own session only, not on {target}; "
                       "send it mail, or make the driving session with `conductor`")


def check_prompt_text(find, uname: str, target: str, text: str) -> None:
    """A conductor agent's prompt for another session is words for a model: text that a CLI would take as a
    command of its own (aider runs `/run X` and `!X`, Claude Code's terminal `!` runs a shell) is refused."""
    agent = acting_agent(find, uname)
    if agent is None or agent.name == target or text.lstrip()[:1] not in ("/", "!"):
        return
    raise InvalidRequest(f"in: session {agent.name}'s prompt for {target} starts with {text.lstrip()[:1]!r}, which "
                         "some agent CLIs run as a command; begin it with a word")


def check_create(find, uname: str, cwd: str) -> None:
    """NotPermitted when an agent that is no conductor starts a session, or a conductor one outside its cwd."""
    agent = acting_agent(find, uname)
    if agent is None:
        return
    if not agent.definition.conductor:
        raise NotPermitted(f"new: session {agent.name}'s agent may not start sessions; only a session made with "
                           "`conductor` may, inside its own cwd")
    mine = os.path.realpath(agent.definition.cwd)
    if not (os.path.realpath(cwd) + "/").startswith(mine.rstrip("/") + "/"):
        raise NotPermitted(f"new: a conductor session starts sessions inside its own cwd {agent.definition.cwd}; "
                           f"{cwd} is outside it")


def check_budget_setter(find, uname: str, what: str) -> None:
    """NotPermitted when an agent, a conductor's included, sets a budget after the fact: a budget is what
    holds the agents, so none raises one, its own or another's (a person, a script or an external
    session's owner does; a conductor agent may give one at `new`)."""
    agent = acting_agent(find, uname)
    if agent is not None:
        raise NotPermitted(f"{what}: session {agent.name}'s agent may not set budgets; a person (or a conductor "
                           "outside anvilfs) raises them, e.g. `anvilfs write agent/NAME/ctl 'budget 5'`")
