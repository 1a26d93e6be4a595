"""Request and response bodies of the collection API (pydantic models at the edge)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, model_validator

from ..model import SLUG_PATTERN
from ..store import MAX_RECIPIENTS

__all__ = [
    "MAX_BATCH",
    "ArmName",
    "BatchIn",
    "BatchItem",
    "CredentialIn",
    "CredentialOut",
    "CredentialRequest",
    "InvitationsIn",
    "Published",
    "QuestionId",
    "ResponseIn",
    "Stored",
    "SurveyId",
    "UnusedIn",
]

#: Largest number of responses in one batch request.
MAX_BATCH = 10_000

QuestionId = Annotated[str, Field(pattern=SLUG_PATTERN)]
SurveyId = Annotated[str, Field(pattern=SLUG_PATTERN)]
ArmName = Annotated[str, Field(pattern=SLUG_PATTERN)]


#: base64url text of at most 4096-bit (512-byte) RSA values
_B64URL = r"^[A-Za-z0-9_-]+={0,2}$"


class CredentialIn(BaseModel):
    """A finalized blind-signature credential (RFC 9474), base64url."""

    model_config = ConfigDict(extra="forbid")
    message: str = Field(
        min_length=8, max_length=200, pattern=_B64URL, description="The prepared message."
    )
    signature: str = Field(
        min_length=8, max_length=700, pattern=_B64URL, description="Its RSASSA-PSS signature."
    )


class CredentialRequest(BaseModel):
    """An invitation token and a blinded message to sign (RFC 9474 ``Blind`` output)."""

    model_config = ConfigDict(extra="forbid")
    token: str = Field(min_length=1, max_length=200, description="One-time invitation token.")
    blinded_msg: str = Field(min_length=8, max_length=700, pattern=_B64URL)
    version: StrictInt | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="The survey version the invitation is bound to (its link's v=...); "
        "default the latest. The credential answers that version only.",
    )
    arm: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="In a study with arms, the arm the invitation is bound to (the one "
        "the device drew); the credential verifies for that arm only.",
    )


class CredentialOut(BaseModel):
    """The blind signature (base64url) and the variant it belongs to."""

    blind_sig: str
    variant: str


class ResponseIn(BaseModel):
    """One response: a report code for every question of the survey version."""

    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1, le=1_000_000, description="Survey version answered.")
    credential: CredentialIn | None = Field(
        default=None, description="Needed when the survey requires invitations."
    )
    reports: dict[QuestionId, StrictInt | None] = Field(
        description="Report code (0..m-1) per question id; never the true answer. null "
        "only for a direct question with allow_no_answer (stored as missing).",
        max_length=100,
    )
    arm: ArmName | None = Field(
        default=None, description="The arm the device drew (surveys with arms only)."
    )
    groups: dict[QuestionId, StrictInt] | None = Field(
        default=None,
        max_length=100,
        description="The group (0 or 1) the device drew for each group-design question.",
    )


class BatchItem(BaseModel):
    """One response inside a batch."""

    model_config = ConfigDict(extra="forbid")
    reports: dict[QuestionId, StrictInt | None] = Field(max_length=100)
    arm: ArmName | None = None
    groups: dict[QuestionId, StrictInt] | None = Field(default=None, max_length=100)


class BatchIn(BaseModel):
    """Many responses to one survey version (surveys without invitations only)."""

    model_config = ConfigDict(extra="forbid")
    version: StrictInt = Field(ge=1, le=1_000_000)
    responses: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH)


class InvitationsIn(BaseModel):
    """How many anonymous invitation tokens to issue (``count``), or the named
    recipients to invite (``recipients``: addresses, one invitation each, within the
    server's lifetime budget per person); exactly one of the two."""

    model_config = ConfigDict(extra="forbid")
    count: StrictInt | None = Field(default=None, ge=1, le=100_000)
    recipients: list[str] | None = Field(
        default=None, min_length=1, max_length=MAX_RECIPIENTS, description="Addresses."
    )

    @model_validator(mode="after")
    def _one(self) -> InvitationsIn:
        if (self.count is None) == (self.recipients is None):
            raise ValueError("give exactly one of count (anonymous links) and recipients")
        return self


class UnusedIn(BaseModel):
    """Invitations to look up for a reminder: SHA-256 (hex) of each token, as the
    researcher's own links file gives them (the server stores these hashes already)."""

    model_config = ConfigDict(extra="forbid")
    token_hashes: list[Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]] = Field(
        min_length=1, max_length=MAX_RECIPIENTS
    )


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
    #: what the analyst should know before inviting (PostgreSQL's ``xmin``, ...)
    warnings: list[str] = Field(default_factory=list)
