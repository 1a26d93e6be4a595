"""Reading what a survey has collected: tallies, counts, the timeline and the export.

:class:`Released` is a store's ``store.released``. Every read sees released
responses only (crowds of at least ``min_release``, :mod:`.staging`), but the arrival
and withheld counts; rows come ordered by their random ids, never by arrival.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd
from sqlalchemy import func, select

from ...tallies import Tally
from ._schema import arrivals, reports, staging_counts, surveys

if TYPE_CHECKING:
    from ..model import Survey
    from ._storage import Store

__all__ = ["Released"]

#: The columns of the released report rows the reads work on (``_long``): all but the
#: row's own id and the survey (one survey is read at a time).
_LONG_COLUMNS = tuple(c.name for c in reports.columns if c.name not in ("report_id", "survey_id"))


class Released:
    """What a store's releases have made readable, which is all an analyst reads: the
    tallies, counts, timeline and export of released responses (and the arrival and
    withheld counts beside them). A store's ``store.released``.

    Parameters
    ----------
    store : Store
        The store whose database holds them.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.store import Store
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> _ = store.publish(load_survey("examples/campus.yaml"))
    >>> store.released.count("campus"), len(store.released.export("campus"))
    (0, 0)
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def tallies(self, survey: Survey) -> dict[str, Tally]:
        """Report counts per question (SQL ``GROUP BY``) of the released responses, as
        mergeable tallies (nothing is recoded: a response in a small key cell waits,
        :mod:`.disclosure`)."""
        counts = {q.id: np.zeros(q.mechanism.n_reports, dtype=np.int64) for q in survey.questions}
        q = (
            select(reports.c.question_id, reports.c.report, func.count())
            .where(reports.c.survey_id == survey.id, reports.c.version == survey.version)
            .group_by(reports.c.question_id, reports.c.report)
        )
        with self._store.reader.connect() as conn:
            for qid, code, n in conn.execute(q):
                if qid in counts and 0 <= code < counts[qid].size:
                    counts[qid][code] = n
        return {qid: Tally(c) for qid, c in counts.items()}

    def arrivals(self, survey: Survey) -> list[int]:
        """Responses that arrived in each arm of a version (in :attr:`Survey.arm_names`
        order; one entry without arms), released, waiting and withheld together: the
        sample-ratio test counts these, never what a release let through."""
        out = [0] * max(len(survey.arm_names), 1)
        q = select(arrivals.c.arm, arrivals.c.n).where(
            arrivals.c.survey_id == survey.id, arrivals.c.version == survey.version
        )
        with self._store.reader.connect() as conn:
            for arm, n in conn.execute(q):
                if 0 <= arm < len(out):
                    out[arm] = int(n)
        return out

    def state(self, survey_id: str) -> tuple[tuple[int, int, int, int, int], ...]:
        """What the releases of a survey id have made readable, in one primary-key read:
        per version ``(version, released, releases, withheld, as_given)``, sorted. It
        changes at a release, a close and a publish, never at a response's arrival, so
        anything computed from the released rows alone can be kept until it changes
        (the results' cache, :func:`deniable.collection.study.survey_results`)."""
        c = staging_counts.c
        q = select(c.version, c.released, c.releases, c.withheld, c.as_given).where(
            c.survey_id == survey_id
        )
        with self._store.reader.connect() as conn:
            rows = conn.execute(q).all()
        return tuple(sorted((int(v), int(r), int(n), int(w), int(g)) for v, r, n, w, g in rows))

    def withheld(self, survey_id: str) -> dict[int, dict[str, int]]:
        """Per version of a survey id: ``withheld`` (waiting at a close, withheld for
        good) and ``as_given`` (released before post-randomization, their sensitive
        direct answers and list counts as given)."""
        q = select(
            staging_counts.c.version, staging_counts.c.withheld, staging_counts.c.as_given
        ).where(staging_counts.c.survey_id == survey_id)
        with self._store.reader.connect() as conn:
            return {int(v): {"withheld": int(w), "as_given": int(g)} for v, w, g in conn.execute(q)}

    def _long(self, survey_id: str, version: int | None = None) -> pd.DataFrame:
        """Released report rows of a survey (one version, or all), ordered by the random
        report id: ``response_id, version, question_id, report, release_number, arm,
        grp`` (the arm's index and the question's group, integers)."""
        q = (
            select(*(reports.c[name] for name in _LONG_COLUMNS))
            .where(reports.c.survey_id == survey_id)
            .order_by(reports.c.report_id)
        )
        if version is not None:
            q = q.where(reports.c.version == version)
        with self._store.reader.connect() as conn:
            # the driver's plain tuples (these columns need no conversion): a frame
            # built from Row objects probed each for attributes, 7 of the 9 s a first
            # results read of 20,000 responses took
            rows = conn.execute(q).cursor.fetchall()
        return pd.DataFrame.from_records(rows, columns=list(_LONG_COLUMNS))

    def count(self, survey_id: str, version: int | None = None) -> int:
        """Number of released responses (in results and exports), all versions unless
        given: a sum of crowds of at least ``min_release`` each.

        Read from the releases' running total (``staging_counts.released``, one row a
        version), not by counting distinct responses over every report row (1.5 s at
        100,000 responses); a version released before the total was kept (a store of
        an early format, whose responses were never staged) is counted."""
        counted = select(staging_counts.c.version, staging_counts.c.released).where(
            staging_counts.c.survey_id == survey_id
        )
        published = select(surveys.c.version).where(surveys.c.survey_id == survey_id)
        if version is not None:
            counted = counted.where(staging_counts.c.version == version)
            published = published.where(surveys.c.version == version)
        with self._store.reader.connect() as conn:
            totals = {int(v): int(n) for v, n in conn.execute(counted)}
            early = [int(v) for v in conn.execute(published).scalars() if int(v) not in totals]
            if early:
                q = select(func.count(func.distinct(reports.c.response_id))).where(
                    reports.c.survey_id == survey_id, reports.c.version.in_(early)
                )
                totals[-1] = int(conn.execute(q).scalar() or 0)
        return sum(totals.values())

    def report_count(self) -> int:
        """Number of stored report rows, all surveys."""
        with self._store.reader.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(reports)).scalar() or 0)

    def timeline(self, survey_id: str) -> list[tuple[int, int]]:
        """``(hour, epoch seconds; responses released in it)`` per hour with a release,
        in time order, from the audit log (no report row carries a time)."""
        hours: dict[int, int] = {}
        for entry in self._store.audit_log(survey_id, limit=10_000):
            if entry["action"] == "release":
                hour = int(entry["at"]) - int(entry["at"]) % 3600
                hours[hour] = hours.get(hour, 0) + int(entry["detail"].get("responses", 0))
        return sorted(hours.items())

    def export(self, survey_id: str) -> pd.DataFrame:
        """All released reports of a survey, one row per (response, question).

        Every call gives the responses fresh random ids and a fresh random order (rows
        of one response together), so two exports of one release cannot be lined up
        by id or by position; what lines releases up, the key cells, is held to
        :mod:`.disclosure`'s rules when released.

        Columns: ``response_id`` (str, random, new in every export), ``version`` (int),
        ``question_id`` (str), ``report`` (int code), ``report_label`` (str),
        ``release`` (int, the number of the version's release that brought the
        response: 1, 2, ...; 0 for responses released before release numbers were
        kept), ``arm`` (str, the arm's name; empty without arms) and ``group`` (int, 0
        or 1, the group of a group design; 0 otherwise).
        """
        versions = {s.version: s for s in self._store.versions(survey_id)}
        frame = self._long(survey_id)
        # fresh ids, and the rows ordered by them (then by question): sorted integer
        # codes, never a sort of a million strings, and no Python loop per row
        codes, _ = pd.factorize(frame["response_id"])
        fresh = _fresh_ids(int(codes.max()) + 1 if codes.size else 0)
        rank = np.empty(fresh.size, dtype=np.int64)
        rank[np.argsort(fresh, kind="stable")] = np.arange(fresh.size)
        fresh = fresh.astype(str).astype(object)
        question, _ = pd.factorize(frame["question_id"], sort=True)
        order = np.lexsort((question, rank[codes]))
        frame = frame.iloc[order].reset_index(drop=True)
        frame["response_id"] = fresh[codes[order]]
        label = np.empty(len(frame), dtype=object)
        arm = np.empty(len(frame), dtype=object)
        report, asked_ids = frame["report"].to_numpy(), frame["question_id"].to_numpy()
        for pair, rows in frame.groupby(["version", "arm"]).indices.items():
            v, a = cast("tuple[int, int]", pair)
            version = versions[int(v)]
            name = version.arm_names[int(a)] if version.arm_names else None
            arm[rows] = name or ""
            asked = {q.id: np.asarray(q.report_labels, dtype=object)
                     for q in version.questions_in(name)}  # fmt: skip
            in_arm = asked_ids[rows]
            for qid, labels in asked.items():
                mine = rows[in_arm == qid]
                label[mine] = labels[report[mine]]
        if pd.isna(label).any():
            raise KeyError(
                f"{survey_id}: a released report of a question its version and arm do not ask"
            )
        frame.insert(4, "report_label", label)
        frame["arm"] = arm
        return frame.rename(columns={"grp": "group", "release_number": "release"})


def _fresh_ids(m: int) -> np.ndarray:
    """``m`` fresh random ids, 32 hex digits each (16 bytes of ``os.urandom``, as
    :func:`secrets.token_hex`), shape (m,), dtype ``S32``."""
    return np.frombuffer(os.urandom(16 * m).hex().encode("ascii"), dtype="S32")
