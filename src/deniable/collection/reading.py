"""Reading what a survey has collected: tallies, counts, the timeline and the export.

:class:`ReadingMixin` is part of :class:`~deniable.collection.storage.Store`. Every
read but :meth:`ReadingMixin.response_count` sees released responses only (crowds of at
least ``min_release``, :mod:`.staging`); rows come ordered by their random ids, never
by arrival.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, select

from ..tallies import Tally
from .schema import reports

if TYPE_CHECKING:
    from .survey import Survey

__all__ = ["ReadingMixin", "suppress_small_cells"]

#: The columns of the released report rows the reads work on (``_long``): all but the
#: row's own id and the survey (one survey is read at a time).
_LONG_COLUMNS = tuple(c.name for c in reports.columns if c.name not in ("report_id", "survey_id"))


def suppress_small_cells(frame: pd.DataFrame, versions: Sequence[Survey]) -> pd.DataFrame:
    """``frame`` (released report rows: ``response_id, version, question_id, report``,
    ...) without the direct answers of responses whose *cell* is small.

    A cell is a combination of a version's direct answers (faculty x year); each is a
    quasi-identifier. A response whose cell holds fewer than the version's
    ``min_release`` released responses has every direct answer recoded to missing (its
    rows dropped: empty in the wide exports); its randomized reports stay. The
    dashboard, the API and every export read through this, so all of them analyse the
    same data. Responses that lack a direct answer already form cells of their own.
    """
    drop = np.zeros(len(frame), dtype=bool)
    for survey in versions:
        direct = [q.id for q in survey.direct_questions]
        if not direct:
            continue
        rows = (frame["version"] == survey.version).to_numpy() & frame["question_id"].isin(
            direct
        ).to_numpy()
        if not rows.any():
            continue
        cells = (
            frame[rows]
            .pivot(index="response_id", columns="question_id", values="report")
            .reindex(columns=direct)
            .fillna(-1)
        )
        size = cells.groupby(direct)[direct[0]].transform("size")
        small = size.index[size.to_numpy() < survey.min_release]
        drop |= rows & frame["response_id"].isin(small).to_numpy()
    return frame[~drop].reset_index(drop=True)


class ReadingMixin:
    """Tallies, counts, timeline and export methods of the store."""

    reader: Engine

    def survey(self, survey_id: str, version: int | None = None) -> Survey:
        raise NotImplementedError

    def waiting(self, survey_id: str) -> dict[int, int]:
        raise NotImplementedError

    if TYPE_CHECKING:  # LifecycleMixin's (a stub here would shadow it)

        def versions(self, survey_id: str) -> list[Survey]: ...

    def tallies(self, survey: Survey) -> dict[str, Tally]:
        """Report counts per question (SQL ``GROUP BY``), as mergeable tallies; a direct
        question's counts leave out the answers :func:`suppress_small_cells` recodes to
        missing."""
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
        if survey.direct_questions:
            kept = suppress_small_cells(self._long(survey.id, survey.version), [survey])
            for question in survey.direct_questions:
                codes = kept.loc[kept["question_id"] == question.id, "report"].to_numpy()
                counts[question.id] = np.bincount(codes, minlength=question.mechanism.n_reports)
        return {qid: Tally(c) for qid, c in counts.items()}

    def _long(self, survey_id: str, version: int | None = None) -> pd.DataFrame:
        """Released report rows of a survey (one version, or all), ordered by the random
        report id: ``response_id, version, question_id, report, received_bucket, arm,
        grp`` (the arm's index and the question's group, integers)."""
        q = (
            select(*(reports.c[name] for name in _LONG_COLUMNS))
            .where(reports.c.survey_id == survey_id)
            .order_by(reports.c.report_id)
        )
        if version is not None:
            q = q.where(reports.c.version == version)
        with self.reader.connect() as conn:
            rows = conn.execute(q).all()
        return pd.DataFrame(rows, columns=list(_LONG_COLUMNS))

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
        UTC, start of the bucket), ``arm`` (str, the arm's name; empty without arms) and
        ``group`` (int, 0 or 1, the group of a group design; 0 otherwise).
        """
        versions = {s.version: s for s in self.versions(survey_id)}
        frame = suppress_small_cells(self._long(survey_id), list(versions.values()))
        labels: dict[tuple[int, int, str], list[str]] = {}
        arm_names: dict[tuple[int, int], str] = {}
        for number, version in versions.items():
            for a, arm in enumerate(version.arm_names or [None]):
                arm_names[number, a] = arm or ""
                for question in version.questions_in(arm):
                    labels[number, a, question.id] = question.report_labels
        frame.insert(
            4,
            "report_label",
            [
                labels[int(v), int(a), qid][r]
                for v, a, qid, r in frame[["version", "arm", "question_id", "report"]].itertuples(
                    index=False
                )
            ],
        )
        frame["received_bucket"] = pd.to_datetime(frame["received_bucket"], unit="s", utc=True)
        frame["arm"] = [
            arm_names[int(v), int(a)] for v, a in zip(frame["version"], frame["arm"], strict=False)
        ]
        return frame.rename(columns={"grp": "group"})
