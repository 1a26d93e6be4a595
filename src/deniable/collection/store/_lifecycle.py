"""A survey's life after publishing: closing and reopening, revoking invitations, its
status, and the audit log of the analyst's actions.

:class:`LifecycleMixin` is part of :class:`~deniable.collection.store.Store`.

- A closed survey id takes no responses and issues no credentials: the check runs
  inside the transaction that would store them (:meth:`Store.commit_group`), so
  nothing is stored after the close has committed, with any number of server workers.
- Closing releases every complete key cell and withholds what still waits, for good
  (a reopen does not bring it back).
- Revoking deletes the rows of the unused invitations (so their tokens no longer
  work) and keeps only their count.
- The audit log records who did what and when: each release of results (JSON, page,
  export), publish, invitations issued, close, reopen and revoke. "Who" is the channel
  the analyst token came through (``api``, ``session`` for the signed-in browser,
  ``cli``); the log holds nothing of a respondent.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, update

from ...errors import SurveyNotFoundError
from ..model import lifetime_ledger
from ._central import pooled_statement, version_statement
from ._recipients import lifetime_budget_from_environment
from ._schema import audit_log, invitations, recipient_ledger, survey_state, surveys

if TYPE_CHECKING:
    from ..model import Survey

__all__ = ["AUDIT_ACTIONS", "LifecycleMixin"]

#: The actions the audit log records.
AUDIT_ACTIONS = (
    "close",
    "export",
    "invite",
    "publish",
    "release",
    "reopen",
    "revoke",
    "unused",
)


class LifecycleMixin:
    """Close, reopen, revoke, status and audit methods of the store."""

    engine: Engine
    reader: Engine

    def survey(self, survey_id: str, version: int | None = None) -> Survey:
        raise NotImplementedError

    def forget_history(self) -> None:
        raise NotImplementedError

    def response_count(self, survey_id: str, version: int | None = None) -> int:
        raise NotImplementedError

    def versions(self, survey_id: str) -> list[Survey]:
        """Every published version of a survey id, oldest first (empty if none)."""
        q = (
            select(surveys.c.version)
            .where(surveys.c.survey_id == survey_id)
            .order_by(surveys.c.version)
        )
        with self.reader.connect() as conn:
            numbers = list(conn.execute(q).scalars())
        return [self.survey(survey_id, v) for v in numbers]

    @contextmanager
    def _state_change(self, survey_id: str) -> Iterator[Connection]:
        """A write transaction on a published survey id's state row (made if missing);
        the WAL is truncated after it commits.

        Raises
        ------
        SurveyNotFoundError
        """
        self.survey(survey_id)
        with self.engine.begin() as conn:
            exists = conn.execute(
                select(survey_state.c.survey_id).where(survey_state.c.survey_id == survey_id)
            ).first()
            if exists is None:
                conn.execute(
                    insert(survey_state).values(survey_id=survey_id, closed=False, revoked=0)
                )
            yield conn
        self.forget_history()

    # -- open and closed ---------------------------------------------------------
    def set_closed(self, survey_id: str, closed: bool, actor: str = "api") -> None:
        """Close (``closed=True``) or reopen a published survey id; audited.

        A close makes the last release (every complete key cell) and withholds what
        still waits, for good: a reopen does not bring it back, and no version changes.

        Raises
        ------
        SurveyNotFoundError
        """
        with self._state_change(survey_id) as conn:
            if closed:
                self._release(conn, survey_id, True, actor)  # type: ignore[attr-defined]
            conn.execute(
                update(survey_state)
                .where(survey_state.c.survey_id == survey_id)
                .values(closed=closed)
            )
            self._audit(conn, actor, "close" if closed else "reopen", survey_id, None, {})

    def is_closed(self, survey_id: str) -> bool:
        """Whether the survey id is closed (unknown ids are not)."""
        with self.reader.connect() as conn:
            return bool(self.closed_among(conn, [survey_id]))

    @staticmethod
    def closed_among(conn: Connection, survey_ids: Iterable[str]) -> set[str]:
        """The closed ones of ``survey_ids``, read on ``conn`` (inside its transaction)."""
        ids = sorted(set(survey_ids))
        if not ids:
            return set()
        q = select(survey_state.c.survey_id).where(
            survey_state.c.survey_id.in_(ids), survey_state.c.closed.is_(True)
        )
        return set(conn.execute(q).scalars())

    # -- invitations -------------------------------------------------------------
    def revoke_invitations(self, survey_id: str, actor: str = "api") -> int:
        """Delete the unused invitations of a survey id (their tokens stop working);
        return how many. Audited.

        Raises
        ------
        SurveyNotFoundError
        """
        with self._state_change(survey_id) as conn:
            gone = conn.execute(
                delete(invitations).where(
                    invitations.c.survey_id == survey_id, invitations.c.used.is_(False)
                )
            ).rowcount
            conn.execute(
                update(survey_state)
                .where(survey_state.c.survey_id == survey_id)
                .values(revoked=survey_state.c.revoked + gone)
            )
            self._audit(conn, actor, "revoke", survey_id, None, {"revoked": gone})
        return int(gone)

    def invitation_counts(self, survey_id: str) -> dict[str, int]:
        """``{"issued", "used", "unused", "revoked", "named", "anonymous"}`` invitations
        of a survey id (``named``: to recipients in the server's ledger)."""
        with self.reader.connect() as conn:
            return self._invitation_counts(conn, survey_id)

    @classmethod
    def anonymous_invitations(cls, conn: Connection, survey_id: str) -> int:
        """How many invitations of a survey id were not to named recipients."""
        return cls._invitation_counts(conn, survey_id)["anonymous"]

    @staticmethod
    def _invitation_counts(conn: Connection, survey_id: str) -> dict[str, int]:
        used, unused = 0, 0
        q = (
            select(invitations.c.used, func.count())
            .where(invitations.c.survey_id == survey_id)
            .group_by(invitations.c.used)
        )
        for flag, n in conn.execute(q):
            used, unused = (int(n), unused) if flag else (used, int(n))
        revoked = conn.execute(
            select(survey_state.c.revoked).where(survey_state.c.survey_id == survey_id)
        ).scalar()
        named = conn.execute(
            select(func.count())
            .select_from(recipient_ledger)
            .where(recipient_ledger.c.survey_id == survey_id)
        ).scalar()
        revoked = int(revoked or 0)
        issued = used + unused + revoked
        return {
            "issued": issued,
            "used": used,
            "unused": unused,
            "revoked": revoked,
            "named": int(named or 0),
            "anonymous": issued - int(named or 0),
        }

    # -- status ------------------------------------------------------------------
    def status(self, survey_id: str) -> dict[str, Any]:
        """Everything about a survey id at a glance: versions (title, digest, responses),
        open or closed, invitations, and the lifetime budget ledger.

        Raises
        ------
        SurveyNotFoundError
        """
        versions = self.versions(survey_id)
        if not versions:
            raise SurveyNotFoundError(f"no published survey {survey_id!r}")
        latest = versions[-1]
        counts = self.invitation_counts(survey_id)
        return {
            "id": survey_id,
            "title": latest.title,
            "latest_version": latest.version,
            "closed": self.is_closed(survey_id),
            "requires_invitation": latest.requires_invitation,
            "min_release": latest.min_release,
            "responses": self.response_count(survey_id),
            "versions": [
                {
                    "version": s.version,
                    "title": s.title,
                    "digest": s.digest,
                    "responses": self.response_count(survey_id, s.version),
                }
                for s in versions
            ],
            "invitations": counts,
            "waves": self.waves(survey_id),  # type: ignore[attr-defined]
            "ledger": lifetime_ledger(versions).to_dict(),
            "per_person": {
                "lifetime_budget": lifetime_budget_from_environment(),
                "enforced": counts["anonymous"] == 0,
                "note": (
                    "every invitation went to a named recipient: the server's lifetime "
                    "budget per person holds across all its surveys"
                    if counts["anonymous"] == 0
                    else f"{counts['anonymous']} anonymous invitation(s): across them the "
                    "lifetime budget per person cannot be enforced (nothing says who got "
                    "which); invite named recipients (--recipients) to enforce it"
                ),
            },
        }

    def central_privacy(self, survey: Survey, pooled: bool = False) -> dict[str, Any] | None:
        """The central privacy of a version's releases (:func:`.central.version_statement`
        over their audit entries), or ``None`` where nothing can be said; ``pooled``:
        what the releases of every version of the id say together, the local epsilon of
        a person's distinct draws (:func:`.central.pooled_statement`)."""
        if pooled:
            return pooled_statement(self.versions(survey.id))
        q = select(audit_log.c.detail).where(
            audit_log.c.survey_id == survey.id,
            audit_log.c.version == survey.version,
            audit_log.c.action == "release",
        )
        with self.reader.connect() as conn:
            details = [json.loads(d) for d in conn.execute(q).scalars()]
            anonymous = self.anonymous_invitations(conn, survey.id)
        return version_statement(details, survey, anonymous)

    # -- audit log ---------------------------------------------------------------
    def audit(
        self,
        actor: str,
        action: str,
        survey_id: str,
        version: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Record an analyst's action (one of :data:`AUDIT_ACTIONS`).

        Raises
        ------
        ValueError
            For an unknown action.
        """
        with self.engine.begin() as conn:
            self._audit(conn, actor, action, survey_id, version, detail or {})
        self.forget_history()

    @staticmethod
    def _audit(
        conn: Connection,
        actor: str,
        action: str,
        survey_id: str,
        version: int | None,
        detail: dict[str, Any],
    ) -> None:
        if action not in AUDIT_ACTIONS:
            raise ValueError(f"action must be one of {AUDIT_ACTIONS}, got {action!r}")
        now = int(time.time())
        hour = now - now % 3600
        if action in ("publish", "close"):
            # a researcher's act, no respondent's: its minute dates a wave's field period
            detail = detail | {"minute": now - now % 60}
        conn.execute(
            insert(audit_log).values(
                # the hour, then random: no entry is dated (or ordered) within its hour
                entry_id=f"{hour:019d}{secrets.token_hex(7)[:13]}",
                at=hour,
                actor=actor[:64],
                action=action,
                survey_id=survey_id,
                version=version,
                detail=json.dumps(detail, sort_keys=True),
            )
        )

    def audit_log(self, survey_id: str | None = None, limit: int = 1000) -> list[dict[str, Any]]:
        """The newest ``limit`` (1..10,000) entries, newest first, of one survey id or all:
        ``{"at" (epoch seconds), "actor", "action", "survey", "version", "detail"}``.

        Raises
        ------
        ValueError
            If ``limit`` is out of range.
        """
        if not 1 <= limit <= 10_000:
            raise ValueError(f"limit must be in 1..10000, got {limit}")
        q = select(audit_log).order_by(audit_log.c.entry_id.desc()).limit(limit)
        if survey_id is not None:
            q = q.where(audit_log.c.survey_id == survey_id)
        with self.reader.connect() as conn:
            rows = conn.execute(q).all()
        return [
            {
                "at": r.at,
                "actor": r.actor,
                "action": r.action,
                "survey": r.survey_id,
                "version": r.version,
                "detail": json.loads(r.detail),
            }
            for r in rows
        ]
