"""Beads and convoys as data: what one TOML file holds, checked with pydantic on the way in.

In memory they are plain dataclasses (cheap to change and copy); a file is
validated once, when it is read, by the pydantic models below, so a file a
person broke is reported with the reason instead of being half understood.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .states import Status

MAX_TITLE = 200  # characters (SPEC §4); longer text goes in `description` or `context`
MAX_TEXT = 1 << 20  # bytes of a description, result, context or reason


class ConvoyStatus:
    PLANNING = "planning"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    FAILED = "failed"
    ABANDONED = "abandoned"
    ALL = ("planning", "in_progress", "completed", "failed", "abandoned")
    OPEN = ("planning", "in_progress")


@dataclass(slots=True)
class Bead:
    id: str
    title: str
    role: str
    description: str = ""
    status: Status = Status.PENDING
    assigned_to: str = ""
    lease_until: float = 0.0  # epoch seconds when a lease-held claim runs out; 0: no lease
    held_by_session: bool = False  # its holder was a session when it claimed (then its end releases it)
    result: str = ""
    review: str = ""  # why it was last rejected, for its worker
    approved_by: str = ""
    depends_on: list[str] = field(default_factory=list)
    convoy: str = ""
    requires_approval: bool = False
    owns: list[str] = field(default_factory=list)
    created: str = ""
    updated: str = ""

    def copy(self, **changes) -> Bead:
        return dataclasses.replace(self, depends_on=list(self.depends_on), owns=list(self.owns), **changes)

    def to_toml(self) -> dict:
        data = {name: getattr(self, name) for name in _BEAD_FIELDS}  # dataclasses.asdict costs more (it deep-copies)
        data["status"] = self.status.value
        return data


_BEAD_FIELDS = [f.name for f in dataclasses.fields(Bead)]


@dataclass(slots=True)
class Convoy:
    id: str
    title: str
    goal: str = ""
    status: str = ConvoyStatus.PLANNING
    coordinator: str = ""
    context: str = ""
    created: str = ""
    updated: str = ""

    def copy(self, **changes) -> Convoy:
        return dataclasses.replace(self, **changes)

    def to_toml(self) -> dict:
        return dataclasses.asdict(self)


class _BeadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    title: str = Field(min_length=1, max_length=MAX_TITLE)
    role: str
    description: str = ""
    status: Status = Status.PENDING
    assigned_to: str = ""
    lease_until: float = 0.0
    held_by_session: bool = False
    result: str = ""
    review: str = ""
    approved_by: str = ""
    depends_on: list[str] = []
    convoy: str = ""
    requires_approval: bool = False
    owns: list[str] = []
    created: str = ""
    updated: str = ""


class _ConvoyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    title: str = Field(min_length=1, max_length=MAX_TITLE)
    goal: str = ""
    status: str = Field(default=ConvoyStatus.PLANNING, pattern="^(" + "|".join(ConvoyStatus.ALL) + ")$")
    coordinator: str = ""
    context: str = ""
    created: str = ""
    updated: str = ""


class BadFile(ValueError):
    """A file that is not a valid bead or convoy; the text says what is wrong."""


def bead_from_toml(data: dict, file_id: str) -> Bead:
    # the model's fields as they are (vars), not model_dump()'s copies of them: a fifth of a start's load of
    # 10,000 beads went to making them (issue 32, item 6). Nothing is shared: the model is dropped, and
    # pydantic copies a mutable default (`depends_on = []`) for each model it makes
    return Bead(**vars(_validated(_BeadFile, data, file_id)))


def convoy_from_toml(data: dict, file_id: str) -> Convoy:
    return Convoy(**vars(_validated(_ConvoyFile, data, file_id)))


def _validated(model: type[BaseModel], data: dict, file_id: str):
    try:
        checked = model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in exc.errors())
        raise BadFile(problems) from None
    if checked.id != file_id:
        raise BadFile(f"id {checked.id!r} does not match the file's name ({file_id})")
    return checked
