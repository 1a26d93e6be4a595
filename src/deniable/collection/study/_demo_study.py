"""The study in ``deniable demo``: UCI Adult respondents in two arms and two groups.

Covariates (sex, age in bins) are asked directly; "income over $50K" is asked directly
in a control arm (a third of respondents) and by forced response in the other; "are you
divorced?" is asked by the extended crosswise model in two groups (Heck, Hoffmann &
Moshagen 2018). Respondents are simulated from the real rows, so every truth is known;
each simulated device draws its arm and group and randomizes as the page does
(:func:`deniable.collection.respondent.simulate_responses`), and the responses go to the
server through the batch API. The estimates come back from the results API, as the
dashboard shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..model import load_survey
from ..respondent import simulate_responses

__all__ = ["STUDY_SURVEY", "StudyRow", "run_study"]

#: The study the demo publishes.
STUDY_SURVEY: dict[str, Any] = {
    "format": 1,
    "id": "adult-study",
    "version": 1,
    "title": "A study of the UCI Adult population: direct questions against randomization",
    "description": "Simulated respondents from the 1994 US census extract.",
    "privacy_budget": 3.0,
    "min_release": 30,
    "arms": {
        "direct": {"weight": 1, "designs": {"income": {"name": "direct"}}},
        "forced": {"weight": 2},
    },
    "questions": [
        {
            "id": "sex",
            "text": "What is your sex?",
            "choices": ["Female", "Male"],
            "design": {"name": "direct"},
        },
        {
            "id": "age",
            "text": "How old are you?",
            "range": {"low": 17, "high": 90, "unit": "years"},
            "bins": [17, 30, 45, 60, 90],
            "design": {"name": "direct"},
        },
        {
            "id": "income",
            "text": "Is your income over $50K a year?",
            "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
        },
        {
            "id": "divorced",
            "text": "Are you divorced?",
            "innocuous_question": "Is your mother's birthday in January, February or March?",
            "innocuous_complement": "Is your mother's birthday in April to December?",
            "design": {"name": "extended-crosswise", "params": {"p": 0.25}},
        },
    ],
}


@dataclass(frozen=True)
class StudyRow:
    """One estimate of the study beside the truth of the respondents it covers (those
    released: a response whose key cell, its direct answers asked before treatment,
    holds fewer than ``min_release`` waits, and its truth is not in the estimate's).

    Examples
    --------
    See :func:`run_study`.
    """

    question: str
    what: str
    n: int
    estimate: float
    std_error: float
    low: float
    high: float
    truth: float
    note: str = ""

    @property
    def covered(self) -> bool:
        """Whether the interval contains the truth."""
        return self.low <= self.truth <= self.high


def _released(survey: Any, sent: list[dict[str, Any]]) -> np.ndarray:
    """Which responses of ``sent`` one release of everything sent takes: every key
    cell with at least ``min_release`` (:func:`~deniable.collection.store.select_release`,
    as the server applies it). Boolean, shape ``(len(sent),)``."""
    from ..store import NO_ANSWER, disclosure_plan, select_release

    ids = survey.report_plan.ids
    codes = [
        tuple(NO_ANSWER if r["reports"][q] is None else r["reports"][q] for q in ids) for r in sent
    ]
    return np.array(select_release(disclosure_plan(survey), codes, survey.min_release))


def _truths(people: pd.DataFrame) -> dict[str, np.ndarray]:
    return {
        "sex": (people["sex"] == "Male").to_numpy(dtype=np.int64),
        "age": people["age"].to_numpy(dtype=np.int64),
        "income": (people["income"] == ">50K").to_numpy(dtype=np.int64),
        "divorced": (people["marital-status"] == "Divorced").to_numpy(dtype=np.int64),
    }


def run_study(
    post: Any, get: Any, people: pd.DataFrame, rng: np.random.Generator
) -> list[StudyRow]:
    """Publish :data:`STUDY_SURVEY`, send the simulated responses of ``people`` and read
    the study's estimates back.

    Parameters
    ----------
    post, get : callable
        ``post(path, json) -> dict`` and ``get(path) -> dict`` as the analyst (the
        batch is posted with an ingestion key the analyst issues).
    people : pandas.DataFrame
        UCI Adult rows (``sex``, ``age``, ``income``, ``marital-status``).
    rng : numpy.random.Generator
        The simulated devices' randomness.

    Returns
    -------
    list of StudyRow
        Each arm's estimate, each difference to the reference arm and each group design's
        or pooled estimate, beside the truth of the respondents released.

    Examples
    --------
    The server in process (FastAPI's test client), the analyst's token on every call:

    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from fastapi.testclient import TestClient
    >>> from deniable.collection.server import create_app
    >>> from deniable.collection.store import Store
    >>> from deniable.collection.study import run_study
    >>> from deniable.data import load_adult
    >>> store = Store(f"sqlite:///{pathlib.Path(tempfile.mkdtemp()) / 'rr.sqlite'}")
    >>> client = TestClient(create_app(store, analyst_token="t" * 32))
    >>> def call(path, body, key=None):
    ...     headers = {"Authorization": f"Bearer {key or 't' * 32}"}
    ...     if body is None:
    ...         return client.get(path, headers=headers).raise_for_status().json()
    ...     return client.post(path, json=body, headers=headers).raise_for_status().json()
    >>> people = load_adult().sample(2000, random_state=0)
    >>> rows = run_study(call, lambda path: call(path, None), people, np.random.default_rng(0))
    >>> sorted({row.question for row in rows})
    ['divorced', 'income']
    """
    survey = load_survey(STUDY_SURVEY)
    post("/api/surveys", STUDY_SURVEY, None)
    key = post(f"/api/surveys/{survey.id}/ingestion-keys", {}, None)["key"]
    truths = _truths(people)
    sent = simulate_responses(survey, truths, rng)
    for start in range(0, len(sent), 5000):
        chunk = [
            {k: r[k] for k in ("reports", "arm", "groups") if r[k] is not None}
            for r in sent[start : start + 5000]
        ]
        post(f"/api/surveys/{survey.id}/batch", {"version": 1, "responses": chunk}, key)
    post(f"/api/surveys/{survey.id}/release", {}, None)  # as a scheduled release would
    results = get(f"/api/surveys/{survey.id}/results")
    # the respondents each estimate covers: those the release took (the release rule,
    # applied to what was sent as the server applies it)
    kept = _released(survey, sent)
    arms = np.array([r["arm"] if k else "" for r, k in zip(sent, kept, strict=True)])
    rows: list[StudyRow] = []
    for item in results.get("study", []):
        rows.extend(_item_rows(item, truths[item["question"]], arms, kept))
    return rows


def _item_rows(
    item: dict[str, Any], truth: NDArray[np.int64], arms: NDArray[Any], kept: NDArray[np.bool_]
) -> list[StudyRow]:
    """One question's rows: each arm, each difference to the reference arm, and the
    group design's fit or the pooled estimate, each beside its truth."""
    qid = item["question"]
    rows: list[StudyRow] = []
    for a in item["arms"]:
        rows.append(
            StudyRow(
                qid,
                f"arm {a['arm']} ({a['design']})",
                a["n"],
                a["estimate"],
                a["std_error"],
                a["low"],
                a["high"],
                float(truth[arms == a["arm"]].mean()),
            )
        )
    for d in item["differences"]:
        rows.append(
            StudyRow(
                qid,
                f"{d['arm']} minus {item['reference']}",
                0,
                d["difference"],
                d["std_error"],
                d["low"],
                d["high"],
                float(truth[arms == d["arm"]].mean() - truth[arms == item["reference"]].mean()),
                f"one-sided p = {d['pvalue']:.3g}",
            )
        )
    if item["groups"] is not None:
        g = item["groups"]
        note = ""
        if g["fit"] is not None:
            note = f"fit G2 = {g['fit']['statistic']:.2f}, p = {g['fit']['pvalue']:.3g}"
        rows.append(
            StudyRow(
                qid,
                g["design"],
                g["n"],
                g["estimate"],
                g["std_error"],
                g["interval"]["low"],
                g["interval"]["high"],
                float(truth[kept].mean()),
                note,
            )
        )
    elif item["pooled"] is not None:
        p = item["pooled"]
        pooled = kept & np.isin(arms, p["arms"]) if p["arms"] else kept
        rows.append(
            StudyRow(
                qid,
                f"pooled over {', '.join(p['arms'])}" if p["arms"] else "pooled",
                p["n"],
                p["estimate"],
                p["std_error"],
                p["low"],
                p["high"],
                float(truth[pooled].mean()),
            )
        )
    return rows
