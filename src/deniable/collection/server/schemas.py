"""Request and response bodies of the collection API (pydantic models at the edge)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from ..survey import SLUG_PATTERN

__all__ = [
    "MAX_BATCH",
    "BatchIn",
    "BatchItem",
    "InvitationsIn",
    "Published",
    "QuestionId",
    "ResponseIn",
    "Stored",
    "SurveyId",
]

#: Largest number of responses in one batch request.
MAX_BATCH = 10_000

QuestionId = Annotated[str, Field(pattern=SLUG_PATTERN)]
SurveyId = Annotated[str, Field(pattern=SLUG_PATTERN)]


class ResponseIn(BaseModel):
    """One response: a report code for every question of the survey version."""

    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1, le=1_000_000, description="Survey version answered.")
    token: str | None = Field(
        default=None, min_length=1, max_length=200, description="One-time invitation token."
    )
    reports: dict[QuestionId, StrictInt] = Field(
        description="Report code (0..m-1) per question id; never the true answer.",
        max_length=100,
    )


class BatchItem(BaseModel):
    """One response inside a batch."""

    model_config = ConfigDict(extra="forbid")
    reports: dict[QuestionId, StrictInt] = Field(max_length=100)


class BatchIn(BaseModel):
    """Many responses to one survey version (surveys without invitations only)."""

    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1, le=1_000_000)
    responses: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH)


class InvitationsIn(BaseModel):
    """How many invitation tokens to issue."""

    model_config = ConfigDict(extra="forbid")
    count: StrictInt = Field(ge=1, le=100_000)


class Stored(BaseModel):
    """Acknowledgement: the responses are committed."""

    stored: int
    survey: str
    version: int


class Published(BaseModel):
    """Result of publishing a survey version."""

    id: str
    version: int
    digest: str
    created: bool
    total_epsilon: float | str
