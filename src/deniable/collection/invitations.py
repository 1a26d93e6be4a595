"""Invitations, blind-signature credentials and ingestion keys of the collection store.

:class:`InvitationsMixin` is part of :class:`~deniable.collection.storage.Store`: it
issues invitation tokens, spends one for a blind signature (RFC 9474, see
:mod:`~deniable.collection.credentials`), and issues and checks the ingestion keys of
telemetry batches. Only SHA-256 hashes of tokens and keys are stored.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, insert, select, update

from ..errors import DeniableError, InvitationError, InvitationUsedError, SurveyNotFoundError
from .credentials import CredentialKey
from .schema import credential_keys, hash_token, ingestion_keys, invitations

if TYPE_CHECKING:
    from .storage import PendingResponse
    from .survey import Survey

__all__ = ["INVITATION_MESSAGES", "InvitationsMixin", "PendingSpend"]

INVITATION_MESSAGES = {
    "unknown": "the invitation is not valid for this survey",
    "used": "this invitation has already been used",
}


@dataclass(frozen=True)
class PendingSpend:
    """An invitation to spend for a credential (see :meth:`Store.commit_group`)."""

    survey_id: str
    token_hash: str


class InvitationsMixin:
    """Invitation, credential and ingestion-key methods of the store."""

    engine: Engine
    reader: Engine
    _keys: dict[str, CredentialKey]

    def survey(self, survey_id: str, version: int | None = None) -> Survey:
        raise NotImplementedError

    def forget_history(self) -> None:
        raise NotImplementedError

    def commit_group(
        self, pending: Sequence[PendingResponse | PendingSpend], forget: bool = True
    ) -> list[DeniableError | None]:
        raise NotImplementedError

    # -- invitations and credentials ---------------------------------------------
    def issue_tokens(self, survey_id: str, count: int) -> list[str]:
        """Create ``count`` one-time invitation tokens (1..100,000) for a published survey.

        Returns the plaintext tokens (URL-safe, 192 random bits from ``secrets``); only
        their SHA-256 hashes are stored.
        """
        if not 1 <= count <= 100_000:
            raise ValueError(f"count must be in 1..100000, got {count}")
        self.survey(survey_id)
        tokens = [secrets.token_urlsafe(24) for _ in range(count)]
        rows = [
            {"token_hash": hash_token(t), "survey_id": survey_id, "used": False} for t in tokens
        ]
        with self.engine.begin() as conn:
            conn.execute(insert(invitations), rows)
        self.forget_history()
        return tokens

    @staticmethod
    def _ensure_key(conn: Connection, survey_id: str) -> None:
        exists = conn.execute(
            select(credential_keys.c.survey_id).where(credential_keys.c.survey_id == survey_id)
        ).first()
        if exists is None:
            pem = CredentialKey.generate().to_pem().decode()
            conn.execute(insert(credential_keys).values(survey_id=survey_id, private_key=pem))

    def cached_credential_key(self, survey_id: str) -> CredentialKey | None:
        """The survey's key if this process has already loaded it."""
        return self._keys.get(survey_id)

    def credential_key(self, survey_id: str) -> CredentialKey:
        """The survey's blind-signature key (created when a version needing invitations
        is first published; one key for all versions of the survey id).

        Raises
        ------
        SurveyNotFoundError
            If no published version of the survey needs invitations.
        """
        key = self._keys.get(survey_id)
        if key is None:
            q = select(credential_keys.c.private_key).where(
                credential_keys.c.survey_id == survey_id
            )
            with self.reader.connect() as conn:
                pem = conn.execute(q).scalar()
            if pem is None:
                raise SurveyNotFoundError(f"survey {survey_id!r} takes no invitations")
            key = self._keys[survey_id] = CredentialKey.from_pem(pem.encode())
        return key

    def issue_credential(self, survey_id: str, token: str, blinded: bytes) -> bytes:
        """Spend an invitation and return the blind signature of ``blinded`` (RFC 9474).

        The spend is committed before the signature is made and returned. Use
        :meth:`prepare_spend`, :meth:`commit_group` and :meth:`CredentialKey.blind_sign`
        to share the commit with others, as the server does.

        Raises
        ------
        InvitationError
            If the token is unknown, for another survey, or already spent.
        CredentialError
            If ``blinded`` is malformed; the invitation is then not spent.
        SurveyNotFoundError
            If the survey takes no invitations.
        """
        spend = self.prepare_spend(survey_id, token, blinded)
        (outcome,) = self.commit_group([spend])
        if outcome is not None:
            raise outcome
        return self.credential_key(survey_id).blind_sign(blinded)

    def prepare_spend(self, survey_id: str, token: str, blinded: bytes) -> PendingSpend:
        """Check ``blinded`` against the survey's key (no database write); the spend is
        then to commit, and the signature to make after it.

        Raises
        ------
        CredentialError, SurveyNotFoundError
            As :meth:`issue_credential`.
        """
        self.credential_key(survey_id).check_blinded(blinded)
        return PendingSpend(survey_id, hash_token(token))

    def add_ingestion_key(self, survey_id: str) -> str:
        """A new ingestion key for telemetry batches to a published survey (shown once;
        only its SHA-256 is stored)."""
        self.survey(survey_id)
        key = secrets.token_urlsafe(32)
        with self.engine.begin() as conn:
            conn.execute(
                insert(ingestion_keys).values(key_hash=hash_token(key), survey_id=survey_id)
            )
        self.forget_history()
        return key

    def ingestion_key_valid(self, survey_id: str, key: str) -> bool:
        """Whether ``key`` is an ingestion key of ``survey_id``."""
        q = select(ingestion_keys.c.survey_id).where(
            ingestion_keys.c.key_hash == hash_token(key), ingestion_keys.c.survey_id == survey_id
        )
        with self.reader.connect() as conn:
            return conn.execute(q).first() is not None

    @staticmethod
    def _spend_all(
        conn: Connection, spends: Sequence[PendingSpend]
    ) -> dict[int, InvitationError | None]:
        """Spend invitations with one UPDATE per survey; the outcome of each position."""
        outcomes: dict[int, InvitationError | None] = {}
        first: dict[tuple[str, str], int] = {}
        for i, item in enumerate(spends):
            first.setdefault((item.survey_id, item.token_hash), i)
        by_survey: dict[str, list[str]] = {}
        for survey_id, token_hash in first:
            by_survey.setdefault(survey_id, []).append(token_hash)
        spent: set[tuple[str, str]] = set()
        for survey_id, hashes in by_survey.items():
            done = conn.execute(
                update(invitations)
                .where(
                    invitations.c.survey_id == survey_id,
                    invitations.c.token_hash.in_(hashes),
                    invitations.c.used.is_(False),
                )
                .values(used=True)
                .returning(invitations.c.token_hash)
            ).scalars()
            spent.update((survey_id, h) for h in done)
        failed = [k for k in first if k not in spent]
        known: set[tuple[str, str]] = set()
        if failed:  # only to say "used" rather than "not valid"
            rows = conn.execute(
                select(invitations.c.survey_id, invitations.c.token_hash).where(
                    invitations.c.token_hash.in_([h for _, h in failed])
                )
            )
            known = {(r.survey_id, r.token_hash) for r in rows}
        for i, item in enumerate(spends):
            key = (item.survey_id, item.token_hash)
            if first[key] == i and key in spent:
                outcomes[i] = None
            elif first[key] != i or key in known:
                outcomes[i] = InvitationUsedError(INVITATION_MESSAGES["used"])
            else:
                outcomes[i] = InvitationError(INVITATION_MESSAGES["unknown"])
        return outcomes
