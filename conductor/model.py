"""What a workflow file can say, as pydantic models: sessions, groups and steps.

    Workflow
      name, sessions {NAME: SessionSpec}, groups {NAME: [session...]}, steps [Step...]
    Step (discriminated on `kind`)
      prompt  to, text                 send a prompt to one or many sessions
      wait    sessions, status         until each is in one of the states (blocking on `wait`)
      check   every|any|none, contains, then, else   test the sessions' `out` for a phrase
      gate    run, cwd, timeout, then, else            run a command, branch on its exit status
      repeat  max_rounds, steps, exhausted            a body of steps, left by a `break` outcome
      each    sessions, steps                  the body once per session, all lanes at once (lanes.py)
      bead    action new|claim|complete ...           work units (SPEC §6)
      mail    sender, to, type, subject, body          one message
      merge   bead, timeout, then, else               until the server's merge queue merged the bead's branch

Outcomes (`then`/`else` of check, gate and merge): next (go on), break (leave the
innermost repeat), finish (end the workflow, done), fail (end it, failed).
In an each's body, `{session}` is the lane's session wherever a session name
goes; there `break` leaves the lane's innermost repeat, `finish` ends the
lane (done), `fail` ends the workflow (the other lanes are cancelled).
Cross-references (sessions, placeholders, loop exits) are checked in
`checks.py`, which can say where in the file a problem is.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["next", "break", "finish", "fail"]
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"  # a session's name (docs/using.md, "Session names")
STEP_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
LANE = "{session}"  # in an each's body: the lane's session
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Ref = Annotated[str, Field(pattern=r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,63}|\{session\})$")]  # or the lane's
Targets = Annotated[list[Ref], Field(min_length=1)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SessionSpec(Strict):
    """A session the workflow needs; with `backend`, it is created when missing."""

    backend: str | None = None
    cwd: str | None = None  # relative to the workflow file's directory
    role: str | None = None
    model: str | None = None
    notify: bool = False
    worktree: bool = False  # made with `new BACKEND CWD worktree`: a git worktree of CWD's repository (SPEC §6a)
    base: str | None = Field(None, min_length=1)  # with worktree: the branch its beads branch from and merge into


class StepBase(Strict):
    id: str = Field(pattern=STEP_ID)


class PromptStep(StepBase):
    kind: Literal["prompt"]
    to: Targets  # sessions or groups
    text: str = Field(min_length=1)


class WaitStep(StepBase):
    kind: Literal["wait"]
    sessions: Targets
    status: Annotated[list[str], Field(min_length=1)] = ["await", "idle"]


class CheckStep(StepBase):
    kind: Literal["check"]
    every: list[Ref] | None = None
    any: list[Ref] | None = None
    none: list[Ref] | None = None
    contains: str = Field(min_length=1)
    then: Outcome = "break"
    else_: Outcome = Field("next", alias="else")


class GateStep(StepBase):
    kind: Literal["gate"]
    run: Annotated[list[str], Field(min_length=1)]  # argv, no shell: write ["sh", "-c", "..."] for one
    cwd: str | None = None
    timeout: float = Field(600, gt=0)
    then: Outcome = "next"
    else_: Outcome = Field("fail", alias="else")


class BeadStep(StepBase):
    kind: Literal["bead"]
    action: Literal["new", "claim", "complete"]
    bead: str | None = None  # claim/complete: a bead id, or the id of the `bead new` step that made it
    title: str | None = None  # new
    role: str | None = None  # new
    description: str = ""  # new (a template)
    depends_on: list[str] = []  # new: bead ids or `bead new` step ids
    session: Ref | None = None  # claim: who holds it
    lease: int | None = Field(None, gt=0)
    result: str = ""  # complete (a template)
    # complete, by a worktree session: the reason given when its branch has nothing of its own (SPEC §6a),
    # sent as `complete no-change: REASON` once the server refuses a plain complete for that
    no_change: str | None = Field(None, min_length=1)


class MailStep(StepBase):
    kind: Literal["mail"]
    sender: Ref  # whose `mail` file it is written to: the message is from them
    to: Ref
    type: Literal["PROMPT_REQUEST", "PROMPT_RESPONSE", "QUERY_REQUEST", "QUERY_RESPONSE",
                  "REVIEW_REQUEST", "REVIEW_RESPONSE", "APPROVAL_REQUEST", "APPROVAL_RESPONSE"]
    subject: str = Field(min_length=1, max_length=200)
    body: str = ""  # a template


class MergeStep(StepBase):
    kind: Literal["merge"]
    bead: str  # a bead id, or the id of the `bead new` step that made it
    timeout: float | None = Field(None, gt=0)  # seconds; none: as long as it takes (a wait has none either)
    then: Outcome = "next"  # merged (or completed as no-change: nothing to merge)
    else_: Outcome = Field("fail", alias="else")  # conflict or gate-failed: the bead is back to pending


class RepeatStep(StepBase):
    kind: Literal["repeat"]
    max_rounds: int = Field(gt=0, le=10000)
    steps: Annotated[list[Step], Field(min_length=1)]
    exhausted: Literal["fail", "next"] = "fail"  # after max_rounds without a break


class EachStep(StepBase):
    kind: Literal["each"]
    sessions: Targets  # one lane per session (groups expanded)
    steps: Annotated[list[Step], Field(min_length=1)]


Step = Annotated[Union[PromptStep, WaitStep, CheckStep, GateStep, BeadStep, MailStep, MergeStep, RepeatStep,
                       EachStep],
                 Field(discriminator="kind")]
RepeatStep.model_rebuild()
EachStep.model_rebuild()


class Workflow(Strict):
    name: str = Field(pattern=STEP_ID)
    description: str = ""
    sessions: dict[str, SessionSpec] = {}
    groups: dict[str, list[Name]] = {}
    steps: Annotated[list[Step], Field(min_length=1)]


KINDS = ("prompt", "wait", "check", "gate", "repeat", "each", "bead", "mail", "merge")
