"""Releases: at scheduled moments, at the close, or on the analyst's request.

:class:`ReleasingMixin` is part of :class:`~deniable.collection.store.Store`. A
release moves every complete key cell of a version from the staging slots into
``reports`` (:func:`.staging.release_due`, the rule of :mod:`.release_control`) in one
transaction, audited. It is never made inside an arrival's transaction
(:meth:`Store.commit_group` stores only), so no arrival chooses when a release
happens: the server's schedule calls :meth:`ReleasingMixin.release_scheduled` once a
tick, and a survey is released once per period of its ``release_every``, periods
counted from the epoch.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, text

from ._central import release_statement
from ._staging import (
    _WAITING_BY_VERSION,
    PG_LOCK,
    FreeSlots,
    WaitingNullifiers,
    release_due,
    surveys_in,
)

if TYPE_CHECKING:
    from ..model import Survey

__all__ = ["ReleasingMixin"]


class ReleasingMixin:
    """Release methods of the store."""

    engine: Engine
    reader: Engine
    is_sqlite: bool
    _cache: dict[tuple[str, int], Survey]
    _free: FreeSlots
    _nullifiers: WaitingNullifiers
    _periods: dict[str, int]

    if TYPE_CHECKING:  # the other mixins' and the store's

        def survey(self, survey_id: str, version: int | None = None) -> Survey: ...

        def forget_history(self) -> None: ...

        @classmethod
        def anonymous_invitations(cls, conn: Connection, survey_id: str) -> int: ...

        @staticmethod
        def _audit(
            conn: Connection,
            actor: str,
            action: str,
            survey_id: str,
            version: int | None,
            detail: dict[str, Any],
        ) -> None: ...

    def release(
        self, survey_id: str | None = None, *, withhold: bool = False, actor: str = "server"
    ) -> int:
        """Release, in one transaction, every complete key cell of every version (of
        ``survey_id`` if given) with responses waiting (:func:`.staging.release_due`),
        each release recorded in the audit log (``actor``, at the hour); return how
        many responses were released. ``withhold`` (the close): what still waits is
        withheld for good.

        Raises
        ------
        SurveyNotFoundError
            For a ``survey_id`` never published.
        """
        if survey_id is not None:
            self.survey(survey_id)
        try:
            with self.engine.begin() as conn:
                released = self._release(conn, survey_id, withhold, actor)
        except BaseException:
            self._free.free = None  # a rolled-back release: read the slots again
            raise
        self.forget_history()
        return released

    def release_scheduled(self, now: float | None = None) -> int:
        """The scheduled releases due at ``now`` (seconds since the epoch; default the
        clock): each survey id with responses waiting is released at the boundaries of
        the periods of its latest version's ``release_every``, counted from the epoch,
        so no arrival chooses the moment. A survey first seen waiting in a period is
        released at the next boundary (the first call after it), not at once: its first
        arrival does not choose the moment either. Returns how many responses were
        released."""
        now = time.time() if now is None else now
        with self.reader.connect() as conn:
            ids = sorted({sid for sid, _, _ in conn.execute(_WAITING_BY_VERSION).all()})
        total = 0
        for sid in ids:
            period = int(now // self.survey(sid).release_every)
            last = self._periods.setdefault(sid, period)
            if period != last:
                self._periods[sid] = period
                total += self.release(sid)
        return total

    def _release(
        self,
        conn: Connection,
        only: str | None = None,
        withhold: bool = False,
        actor: str = "server",
    ) -> int:
        """Release what is complete (:func:`.staging.release_due`) in this transaction,
        each release audited; how many responses."""
        if not self.is_sqlite:
            conn.execute(text(f"SELECT pg_advisory_xact_lock({PG_LOCK})"))
        read = surveys_in(conn, self._cache)
        total = 0
        for done in release_due(conn, read, self._free, only, withhold):
            total += done.responses
            detail: dict[str, Any] = {"responses": done.responses, "released": done.released}
            if done.withheld:
                detail["withheld"] = done.withheld
            anonymous = self.anonymous_invitations(conn, done.survey_id)
            survey = read(done.survey_id, done.version)
            central = release_statement(survey, done.smallest_group, anonymous)
            if central is not None and done.responses:  # only where its conditions hold
                detail["central"] = central
            self._audit(conn, actor, "release", done.survey_id, done.version, detail)
        self._nullifiers.forget()
        return total
