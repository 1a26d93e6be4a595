"""Reading what a survey has collected: tallies, counts, the timeline and the export.

:class:`ReadingMixin` is part of :class:`~deniable.collection.storage.Store`. Every
read but :meth:`ReadingMixin.response_count` sees released responses only (crowds of at
least ``min_release``, :mod:`.staging`); rows come ordered by their random ids, never
by arrival.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, select

from ..tallies import Tally
from .schema import reports

if TYPE_CHECKING:
    from .survey import Survey

__all__ = ["ReadingMixin"]


class ReadingMixin:
    """Tallies, counts, timeline and export methods of the store."""

    reader: Engine

    def survey(self, survey_id: str, version: int | None = None) -> Survey:
        raise NotImplementedError

    def waiting(self, survey_id: str) -> dict[int, int]:
        raise NotImplementedError

    def tallies(self, survey: Survey) -> dict[str, Tally]:
        """Report counts per question (SQL ``GROUP BY``), as mergeable tallies."""
        counts = {q.id: np.zeros(q.mechanism.n_reports, dtype=np.int64) for q in survey.questions}
        q = (
            select(reports.c.question_id, reports.c.report, func.count())
            .where(reports.c.survey_id == survey.id, reports.c.version == survey.version)
            .group_by(reports.c.question_id, reports.c.report)
        )
        with self.reader.connect() as conn:
            for qid, code, n in conn.execute(q):
                if qid in counts and 0 <= code < counts[qid].size:
                    counts[qid][code] = n
        return {qid: Tally(c) for qid, c in counts.items()}

    def response_count(self, survey_id: str, version: int | None = None) -> int:
        """Number of stored responses of a survey (all versions unless given): those
        released and those waiting for their crowd."""
        waiting = self.waiting(survey_id)
        extra = sum(waiting.values()) if version is None else waiting.get(version, 0)
        return self.released_count(survey_id, version) + extra

    def released_count(self, survey_id: str, version: int | None = None) -> int:
        """Number of released responses (in results and exports), all versions unless
        given: a sum of crowds of at least ``min_release`` each."""
        q = select(func.count(func.distinct(reports.c.response_id))).where(
            reports.c.survey_id == survey_id
        )
        if version is not None:
            q = q.where(reports.c.version == version)
        with self.reader.connect() as conn:
            return int(conn.execute(q).scalar() or 0)

    def report_count(self) -> int:
        """Number of stored report rows, all surveys."""
        with self.reader.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(reports)).scalar() or 0)

    def timeline(self, survey_id: str) -> list[tuple[int, int]]:
        """``(bucket start, epoch seconds; responses)`` per time bucket, in time order."""
        q = (
            select(reports.c.received_bucket, func.count(func.distinct(reports.c.response_id)))
            .where(reports.c.survey_id == survey_id)
            .group_by(reports.c.received_bucket)
            .order_by(reports.c.received_bucket)
        )
        with self.reader.connect() as conn:
            return [(int(b), int(n)) for b, n in conn.execute(q)]

    def export(self, survey_id: str) -> pd.DataFrame:
        """All reports of a survey, one row per (response, question), ordered by the
        random report id.

        Columns: ``response_id`` (str, random), ``version`` (int), ``question_id`` (str),
        ``report`` (int code), ``report_label`` (str), ``received_bucket`` (datetime64,
        UTC, start of the bucket).
        """
        q = (
            select(
                reports.c.response_id,
                reports.c.version,
                reports.c.question_id,
                reports.c.report,
                reports.c.received_bucket,
            )
            .where(reports.c.survey_id == survey_id)
            .order_by(reports.c.report_id)
        )
        with self.reader.connect() as conn:
            rows = conn.execute(q).all()
        frame = pd.DataFrame(
            rows, columns=["response_id", "version", "question_id", "report", "received_bucket"]
        )
        labels: dict[tuple[int, str], list[str]] = {}
        for version in frame["version"].unique().tolist():
            s = self.survey(survey_id, int(version))
            for question in s.questions:
                labels[int(version), question.id] = question.report_labels
        frame.insert(
            4,
            "report_label",
            [
                labels[int(v), qid][r]
                for v, qid, r in frame[["version", "question_id", "report"]].itertuples(index=False)
            ],
        )
        frame["received_bucket"] = pd.to_datetime(frame["received_bucket"], unit="s", utc=True)
        return frame
