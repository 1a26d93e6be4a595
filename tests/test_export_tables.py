"""The long export and the wide table built from it with integer codes, no loop per row
(the first results read after a release reads them): every call gives fresh random ids
in a fresh order, each report keeps its label and arm, and the wide table is pandas'
pivot of the long one, for a survey with arms and a group design over two waves, and
for a long export read back from a file of floats (.sav, .dta)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from deniable.collection.exports._export import GROUP_SUFFIX, _widen
from deniable.collection.study import campus_store


@pytest.fixture(scope="module")
def campus():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return campus_store(waves=2, responses=200, release=True)


def _pivot(long: pd.DataFrame, versions) -> pd.DataFrame:
    """The wide table by pandas' pivot (an independent reference)."""
    questions = list(dict.fromkeys(q.id for v in versions for q in v.questions))
    grouped = list(dict.fromkeys(q.id for v in versions for q in v.questions if len(q.groups) > 1))
    wide = long.pivot(index="response_id", columns="question_id", values="report")
    meta = long.groupby("response_id")[["version", "release", "arm"]].first()
    frame = meta.join(wide.reindex(columns=questions))
    rows = long[long["question_id"].isin(grouped)]
    groups = rows.pivot(index="response_id", columns="question_id", values="group")
    groups = groups.reindex(columns=grouped)
    groups.columns = [q + GROUP_SUFFIX for q in grouped]
    frame = frame.join(groups).reset_index()
    for column in [*questions, *groups.columns]:
        frame[column] = frame[column].astype("Int64")
    frame.columns.name = None
    return frame.sort_values("response_id", kind="stable").reset_index(drop=True)


def test_every_export_has_fresh_ids_in_their_order_and_each_report_its_label(campus):
    store, survey = campus.store, campus.survey
    first, second = (store.released.export(survey.id) for _ in range(2))
    assert not set(first["response_id"]) & set(second["response_id"])
    assert first["response_id"].str.fullmatch("[0-9a-f]{32}").all()
    assert first["response_id"].is_monotonic_increasing
    ordered = first.groupby("response_id")["question_id"].agg(lambda s: s.is_monotonic_increasing)
    assert ordered.all()
    stored = store.released._long(survey.id)
    assert (
        len(first) == len(stored)
        and first["response_id"].nunique() == stored["response_id"].nunique()
    )
    key = ["version", "question_id", "report"]
    assert first.groupby(key).size().equals(stored.groupby(key).size())
    versions = {v.version: v for v in store.versions(survey.id)}
    for row in first.drop_duplicates(["version", "arm", "question_id", "report"]).itertuples():
        version = versions[row.version]
        (question,) = [q for q in version.questions_in(row.arm or None) if q.id == row.question_id]
        assert row.report_label == question.report_labels[row.report]
    per_arm = first.groupby("response_id")["arm"].nunique()
    assert (per_arm == 1).all() and set(first["arm"]) == set(survey.arm_names)


def test_the_wide_table_is_the_pivot_of_the_long_export(campus):
    store, survey = campus.store, campus.survey
    versions = store.versions(survey.id)
    assert len(versions) == 2 and any(len(q.groups) > 1 for q in survey.questions)
    long = store.released.export(survey.id)
    pd.testing.assert_frame_equal(_widen(long, versions), _pivot(long, versions))
    # read back from a file of floats, with one report missing
    floats = long.astype({"report": np.float64, "group": np.float64})
    floats.loc[3, "report"] = np.nan
    expected = _pivot(long, versions)
    rid, qid = long.loc[3, ["response_id", "question_id"]]
    expected.loc[expected["response_id"] == rid, qid] = pd.NA
    pd.testing.assert_frame_equal(_widen(floats, versions), expected)
    floats.loc[4, "report"] = 1.5
    with pytest.raises(ValueError, match="report: every code"):
        _widen(floats, versions)
