"""A survey's results, from the library's results: what the API's ``results`` and the
dashboard show.

Every number here comes from :mod:`deniable.estimation` and :mod:`deniable.analysis`
(estimates, intervals, warnings, subgroup tables, regressions); each released
question carries the one JSON shape of an estimate
(:meth:`~deniable.estimation.EstimateResult.to_dict`). The HTML pages
(:mod:`deniable.collection.server`) only render it.
"""

from __future__ import annotations

import copy
import math
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ...errors import IntervalCoverageWarning
from ...estimation import estimate
from ...tallies import Tally
from ..exports import wide_frame
from ..model import Survey
from ..store import Store, disclosure_plan, disclosure_report, wave_analysis
from ._by_arm import (
    arm_analysis,
    design_keys,
    has_variants,
    pooled_estimate,
    regression,
    study_frame,
)
from ._list_study import list_item

__all__ = [
    "INTERVAL_NAMES",
    "POOLED_NAME",
    "arm_counts",
    "breakdowns",
    "pooled_tallies",
    "refresh_results",
    "survey_results",
]

#: How each interval method is named to readers of the results.
INTERVAL_NAMES = {
    "feldman_cousins": (
        "Feldman-Cousins unified interval for the report share, mapped through the design "
        "(Feldman & Cousins 1998; never narrower at 0 or 1 than for the count that "
        "prevalence predicts): covers at least 95% at every prevalence"
    ),
    "wilson": "Wilson score interval for the report share, mapped through the design (Wilson 1927)",
    "normal": "Wald interval from the exact variance of the unbiased estimator",
    "agresti_coull": "Agresti-Coull interval for the report share, mapped through the design",
    "beta": "Clopper-Pearson interval for the report share, mapped through the design",
    "jeffreys": "Jeffreys interval for the report share, mapped through the design",
    "bayes": "Bayesian highest-posterior-density credible interval",
}


#: The interval of a question asked through several designs (arms, groups).
POOLED_NAME = (
    "Wald interval of the moment estimate pooled over the arms' and groups' designs "
    "(power-constrained at the boundary)"
)


def arm_counts(
    frame: pd.DataFrame, survey: Survey, arrived: list[int] | None = None
) -> dict[str, Any] | None:
    """The responses per arm against the arms' weights: the counts, the expected counts
    and Pearson's chi-square test of the weights (a sample-ratio test: a respondent who
    re-draws an arm, by clearing storage or on another device, to avoid a direct
    question makes the counts depart from the weights). The counts are ``arrived``
    (per arm, in arm order: what the server staged, ``store.released.arrivals``) where given,
    else the released rows of the wide export ``frame`` (a release takes whole key
    cells, which come before treatment, so it does not select on the arm); ``None``
    without arms."""
    from scipy import stats

    if not survey.arms:
        return None
    if arrived is not None:
        counts = np.array(arrived, dtype=np.int64)
    else:
        arms = study_frame(frame, survey)["arm"]
        counts = np.array([int((arms == a).sum()) for a in survey.arm_names])
    weights = np.array([a.weight for a in survey.arms.values()])
    expected = counts.sum() * weights / weights.sum()
    test = stats.chisquare(counts, expected) if counts.sum() else None
    return {
        "arms": survey.arm_names,
        "counts": counts.tolist(),
        "expected": expected.tolist(),
        "statistic": None if test is None else float(test.statistic),
        "df": len(counts) - 1,
        "pvalue": None if test is None else float(test.pvalue),
    }


def pooled_tallies(store: Store, survey: Survey) -> dict[str, Tally]:
    """Each question's tally summed over every version that asks it unchanged (the same
    content digest: text, labels and design), so the reports share one design."""
    pooled = store.released.tallies(survey)
    digests = {q.id: q.content_digest for q in survey.questions}
    for other in store.versions(survey.id):
        if other.version == survey.version:
            continue
        tallies = store.released.tallies(other)
        for q in other.questions:
            if digests.get(q.id) == q.content_digest:
                pooled[q.id] = pooled[q.id] + tallies[q.id]
    return pooled


def survey_results(
    store: Store,
    survey: Survey,
    level: float,
    pooled: bool = False,
    regress: str | None = None,
    on: list[str] | None = None,
) -> dict[str, Any]:
    """Estimate, standard error and interval of every question, from SQL tallies.

    Everything comes from the latest release: responses enter ``reports`` only in
    crowds of at least ``survey.min_release`` (:mod:`deniable.collection.store`);
    ``waiting`` counts those not yet released. Before a version's first release each
    question says ``released: false`` and how many more responses are ``missing``, and
    carries no counts and no estimate. A released question carries the one JSON shape
    of an estimate (:meth:`~deniable.estimation.PrevalenceEstimate.to_dict`: ``result``,
    ``labels``, ``estimate`` (unbiased, moment), ``std_error``, ``interval``
    (``method``, ``confidence_level``, ``low``, ``high``, and its ``name`` for
    readers), ``warnings``, ``mechanism``, ``estimator`` and ``counts``) and beside it
    the constrained maximum-likelihood estimate (``mle``, inside the simplex); the
    warnings (the library's) say what an estimate outside [0, 1] or a standard error of 0
    means. With ``pooled`` each question counts the responses of every version that asks
    it unchanged (:func:`pooled_tallies`). A numeric question also carries its ``range``
    and ``unit`` and, once released, its ``mean`` (the ``to_dict`` of a
    :class:`~deniable.estimation.RangeMean`, and the MLE, in the question's units). With
    ``regress`` (a randomized yes/no question) and ``on`` (direct questions),
    ``regression`` holds its logistic regression on them
    (:func:`deniable.collection.study.regression`). ``central`` is the central
    ``(epsilon, delta)`` of the version's releases by amplification by shuffling, only
    where its conditions hold (:mod:`deniable.collection.store`), else ``None``
    (always ``None`` pooled over versions).

    Parameters
    ----------
    store : Store
    survey : Survey
        The version to report on.
    level : float in (0, 1)
        The intervals' confidence level.
    pooled : bool, default False
    regress : str, optional
    on : list of str, optional
        As the text says.

    Returns
    -------
    dict
        JSON-ready: the results page and ``GET /api/surveys/{id}/results``.

    Raises
    ------
    ValueError
        For a ``regress`` or ``on`` that does not fit the survey.

    Examples
    --------
    >>> from deniable.collection.exports._export import wide_frame
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store()  # the campus survey, 600 simulated responses
    >>> store, survey = campus.store, campus.survey
    >>> results = survey_results(store, survey, 0.95)
    >>> results["responses"], [q["id"] for q in results["questions"]][:3]
    (600, ['faculty', 'year', 'cheat'])
    """
    key = (survey.id, survey.version, level, pooled, regress, tuple(on or ()))
    state = store.released.state(survey.id)
    with _LOCK:
        hit = _CACHES.setdefault(store, {}).get(key)
    if hit is None or hit[0] != state:
        hit = (state, _computed(store, survey, level, pooled, regress, on))
        with _LOCK:
            cache = _CACHES.setdefault(store, {})
            if len(cache) >= _CACHE_SIZE:
                cache.pop(next(iter(cache)))
            cache[key] = hit
    return _fresh(copy.deepcopy(hit[1]), store, survey)


#: Results kept per store, keyed by the request and checked against the releases' state
#: (:meth:`~deniable.collection.store.Released.state`): nothing in them changes between
#: releases but the counts :func:`_fresh` reads again (issue 65: 2.1 s a read at 37,000
#: responses, 6.8 s with arms, where the wide export was read and analysed each time).
_CACHES: weakref.WeakKeyDictionary[Store, dict[tuple[Any, ...], tuple[Any, dict[str, Any]]]]
_CACHES = weakref.WeakKeyDictionary()
_CACHE_SIZE = 32
_LOCK = threading.Lock()  # the server's worker threads share a store


def refresh_results(store: Store) -> int:
    """Compute again the kept results of ``store`` that a release (or a close, or a
    publish) has made stale, so that the next read of each is a lookup: the release
    schedule calls it after the releases it makes (:mod:`deniable.collection.server`).

    Parameters
    ----------
    store : Store
        The store whose kept results are checked.

    Returns
    -------
    int
        How many were computed; one that no longer fits its survey is dropped.

    Examples
    --------
    >>> from deniable.collection.study import campus_store
    >>> campus = campus_store(responses=40)
    >>> refresh_results(campus.store)
    0
    """
    with _LOCK:
        entries = list(_CACHES.get(store, {}).items())
    done = 0
    for key, (state, _) in entries:
        survey_id, version, level, pooled, regress, on = key
        if store.released.state(survey_id) == state:
            continue
        try:
            survey_results(store, store.survey(survey_id, version), level, pooled, regress,
                           list(on) or None)  # fmt: skip
            done += 1
        except (KeyError, ValueError):
            with _LOCK:
                _CACHES.get(store, {}).pop(key, None)
    return done


def _fresh(out: dict[str, Any], store: Store, survey: Survey) -> dict[str, Any]:
    """The parts of kept results that move without a release, read again: the responses
    waiting and withheld, the note, the questions still missing responses, the arms'
    arrival counts (the sample-ratio test counts what arrived), the central statement
    (an anonymous link issued after a release withdraws it) and the waves' field
    periods and response rates (a close, an invitation)."""
    waiting = store.waiting(survey.id).get(survey.version, 0)
    held = store.released.withheld(survey.id).get(survey.version, {"withheld": 0, "as_given": 0})
    released = out["released"]
    out |= {
        "responses": released + waiting + held["withheld"],
        "waiting": waiting,
        "withheld": held["withheld"],
        "released_as_given": held["as_given"],
        "note": _release_note(survey, released, waiting, held["withheld"], held["as_given"]),
    }
    for item in out["questions"]:
        if not item["released"]:
            item["missing"] = max(0, survey.min_release - waiting)
    if out.get("arms") is not None:
        out["arms"] = arm_counts(pd.DataFrame(), survey, store.released.arrivals(survey))
    out["central"] = store.central_privacy(survey, pooled=out["pooled"])
    if "waves" in out:
        out["waves"] = store.waves(survey.id)
    return out


def _computed(
    store: Store,
    survey: Survey,
    level: float,
    pooled: bool,
    regress: str | None,
    on: list[str] | None,
) -> dict[str, Any]:
    """:func:`survey_results` computed afresh from the released rows."""
    tallies = pooled_tallies(store, survey) if pooled else store.released.tallies(survey)
    out = _summary(store, survey, level, pooled)
    released, waiting = out["released"], out["waiting"]
    pooled_estimates: dict[str, tuple[Any, Any]] = {}  # question -> (moment, mle)
    read: list[pd.DataFrame] = []  # the wide export, read once if anything needs it

    def wide() -> pd.DataFrame:
        if not read:
            read.append(wide_frame(store, survey.id))
        return read[0]

    if released and any(has_variants(survey, q.id) for q in survey.questions):
        pooled_estimates = _arms_part(out, wide(), store, survey, level, pooled)
    for q in survey.questions:
        item = _question_item(q, tallies[q.id], survey, waiting, pooled_estimates, level, wide)
        out["questions"].append(item)
    if survey.direct_questions and not pooled and released:
        out["breakdowns"] = breakdowns(wide(), survey, level)
    _waves_and_disclosure(out, wide, store, survey, level)
    if regress is not None:
        if not released:
            raise ValueError("regress: nothing is released yet")
        out["regression"] = regression(wide(), survey, regress, on or []).to_dict(level)
    return out


def _waves_and_disclosure(
    out: dict[str, Any], wide: Callable[[], pd.DataFrame], store: Store, survey: Survey,
    level: float,
) -> None:  # fmt: skip
    """``waves`` and ``wave_change`` (with several versions) and ``disclosure`` (of the
    released key cells only: never a count of what waits) into ``out``."""
    versions_all = store.versions(survey.id)
    if len(versions_all) > 1:  # waves: their field periods, response rates and change
        out["waves"] = store.waves(survey.id)
        any_released = store.released.count(survey.id) > 0
        out["wave_change"] = wave_analysis(wide(), versions_all, level) if any_released else []
    plan = disclosure_plan(survey)
    channelled = any(c is not None for arm in survey.report_plan.channels for c in arm)
    if not plan.trivial or channelled:
        released = out["released"]
        out["disclosure"] = disclosure_report(
            survey, _key_cells(survey, plan, wide) if released else None
        )


def _summary(store: Store, survey: Survey, level: float, pooled: bool) -> dict[str, Any]:
    """The results' header: counts, the release note, the central epsilon."""
    waiting = store.waiting(survey.id).get(survey.version, 0)
    released = store.released.count(survey.id, survey.version)
    held = store.released.withheld(survey.id).get(survey.version, {"withheld": 0, "as_given": 0})
    return {
        "survey": survey.id,
        "version": survey.version,
        "pooled": pooled,
        "title": survey.title,
        "responses": released + waiting + held["withheld"],
        "released": released,
        "waiting": waiting,
        "confidence_level": level,
        "min_release": survey.min_release,
        "release_every": survey.release_every,
        "withheld": held["withheld"],
        "released_as_given": held["as_given"],
        "note": _release_note(survey, released, waiting, held["withheld"], held["as_given"]),
        # what the released reports say of one person to their readers, where it holds
        "central": store.central_privacy(survey, pooled=pooled),
        "questions": [],
    }


def _arms_part(
    out: dict[str, Any], frame: pd.DataFrame, store: Store, survey: Survey, level: float,
    pooled: bool,
) -> dict[str, tuple[Any, Any]]:  # fmt: skip
    """``study`` and ``arms`` into ``out``; each question's pooled ``(moment, mle)``."""
    versions = store.versions(survey.id) if pooled else None
    studies = arm_analysis(frame, survey, versions=versions)
    out["study"] = [item.to_dict(level) for item in studies]
    out["arms"] = arm_counts(frame, survey, store.released.arrivals(survey))
    estimates: dict[str, tuple[Any, Any]] = {}
    for study in studies:  # the pooled MLE is the study's, over the same rows
        if study.pooled is not None:
            moment = pooled_estimate(frame, survey, study.question, versions, "moment")
            estimates[study.question] = (moment, study.pooled)
    return estimates


def _question_item(
    q: Any,
    tally: Any,
    survey: Survey,
    waiting: int,
    pooled_estimates: dict[str, tuple[Any, Any]],
    level: float,
    wide: Callable[[], pd.DataFrame],
) -> dict[str, Any]:
    """One question's entry: before its release only how many responses are missing;
    then the one shape of an estimate and the MLE (a numeric question's mean, a
    zero-prevalence control's test), or the estimate pooled over arms and groups; a
    list experiment's from the released rows (``wide``)."""
    item: dict[str, Any] = {
        "id": q.id,
        "text": q.text,
        "categories": q.choice_labels,
        "design": q.design.name,
        "epsilon": q.epsilon if math.isfinite(q.epsilon) else "inf",
        "direct": q.is_direct,
        "n": tally.n,
        "released": tally.n >= survey.min_release,
    }
    if q.numeric is not None and q.range is not None:
        item |= {"range": [q.range.low, q.range.high], "unit": q.range.unit}
    if not item["released"]:
        # one total per version, never per cell: a per-cell count would tell a rare
        # answer before any release
        item["missing"] = max(0, survey.min_release - waiting)
        return item
    if q.is_list:  # its entry comes from the rows (:mod:`._list_study`)
        return item | list_item(wide(), q, level, waiting, survey.version, q.release_channel)
    if has_variants(survey, q.id):  # several designs: the estimate pooled over them
        item["design"] = "by arm and group" if len(q.groups) > 1 else "by arm"
        pooled = pooled_estimates.get(q.id)
        if pooled is not None:
            moment, mle = pooled
            with warnings.catch_warnings():  # the stacked design's interval is Wald's
                warnings.simplefilter("ignore", IntervalCoverageWarning)
                item |= moment.to_dict(level)
            item["labels"] = q.choice_labels
            chosen = item["interval"]["method"]  # Wald's unless one design was used
            item["interval"]["name"] = POOLED_NAME if chosen == "normal" else INTERVAL_NAMES[chosen]
            item["mle"] = mle.estimate.tolist()
        return item
    est = estimate(q.mechanism, tally)
    item |= est.to_dict(level)  # the one shape: estimate, std_error, interval, warnings
    item["interval"]["name"] = INTERVAL_NAMES.get(item["interval"]["method"], "")
    item["mle"] = estimate(q.mechanism, tally, method="mle").estimate.tolist()
    if q.numeric is not None:
        item["mean"] = q.mean_from(est).to_dict(level) | {"mle": q.to_units(item["mle"][1])}
    if q.control == "zero" and est.std_error[1] > 0:  # nobody carries it
        p_zero = est.one_sided_pvalue(0.0, category=1)
        item["control"] = {"estimate": float(est.estimate[1]), "pvalue": p_zero}
        item["warnings"].append(
            "a zero-prevalence control: nobody carries it, so its estimate measures "
            f"false positives (one-sided p = {p_zero:.3g} against 0)"
        )
    known = q.validation_prevalence
    if known is not None and est.n > 0:  # Höglinger & Diekmann 2017
        from ...analysis import validation_check

        check = validation_check(est, known)
        item["validation"] = check.to_dict()
        if q.control is None:
            item["warnings"].append(
                f"a validation item of known prevalence {known:g}: the estimate is "
                f"{check.difference:+.3f} from it (SE {check.std_error:.3f} at it); one-sided "
                f"p = {check.pvalue_false_negatives:.3g} for false negatives, "
                f"{check.pvalue_false_positives:.3g} for false positives"
            )
    return item


def _key_cells(survey: Survey, plan: Any, wide: Any) -> dict[Any, int]:
    """The released responses of this version in each key cell of the release rules."""
    rows = wide()
    rows = rows[rows["version"] == survey.version]
    keys = [survey.questions[i].id for i in plan.keys]
    if not keys:
        return {(): len(rows)}
    counts: dict[Any, int] = rows[keys].astype("float64").fillna(-1).value_counts().to_dict()
    return counts


def _release_note(survey: Survey, released: int, waiting: int, withheld: int, as_given: int) -> str:
    """What the results say of the responses not (yet) released: one total per
    version, never per cell; and of responses released before post-randomization."""
    m = survey.min_release
    notes = []
    if as_given:
        notes.append(
            f"{as_given} response(s) of this version were released before the server "
            "post-randomized sensitive direct answers and list counts: theirs were released "
            "as given, and whoever read those releases learned them"
        )
    if withheld:
        notes.append(
            f"{withheld} response(s) of this version are withheld for good: they waited at "
            f"the close in key cells that never reached {m}; they are counted here and "
            "nowhere else"
        )
    if not released and waiting:
        notes.append(
            f"results come with the first release that has a key cell of {m}; {waiting} wait"
        )
    elif waiting:
        notes.append(
            f"{waiting} response(s) wait for a later release (every {survey.release_every} s, "
            f"at the close, or on request): a release adds at least {m} responses to every "
            "key cell it touches"
        )
    return "; ".join(notes)


def breakdowns(frame: pd.DataFrame, survey: Survey, level: float) -> list[dict[str, Any]]:
    """Each randomized yes/no question by each direct question: the prevalence of its
    second answer per answer of the direct one, with its interval and a test of equal
    prevalence (:func:`~deniable.analysis.subgroup_prevalence`); a numeric question's
    mean per answer in its units (``mean: true``; the test of equal means). The rows are the
    version's released responses (cells of direct answers are held to
    :mod:`deniable.collection.store`'s rules when released), those missing either
    answer (skipped) left out: the rows ``deniable analyze EXPORT --question Q --by D`` reads
    (``frame``: the wide export)."""
    from ...analysis import subgroup_prevalence

    rows = study_frame(frame, survey)
    out: list[dict[str, Any]] = []
    for q in survey.questions:
        if q.is_direct or q.mechanism.n_truths != 2:
            continue
        design: Any = q.mechanism
        keys = None
        if has_variants(survey, q.id):  # each row's design: its arm's (and group's)
            keys, design = design_keys(rows, survey, q.id)
        for by in survey.direct_questions:
            if q.id not in rows or by.id not in rows:
                continue
            used = rows[q.id].notna() & rows[by.id].notna()
            if keys is not None:
                used &= keys != ""
            if not used.any():
                continue
            labels = np.array(by.report_labels, dtype=object)[rows.loc[used, by.id].astype(int)]
            with warnings.catch_warnings():  # a pooled estimate's only interval is Wald's
                warnings.simplefilter("ignore", IntervalCoverageWarning)
                res = subgroup_prevalence(
                    design,
                    rows.loc[used, q.id].to_numpy(np.int64),
                    labels,
                    design_keys=None if keys is None else keys[used].to_numpy(dtype=str),
                )
                table = res.table(level)
            test = res.test_equal() if len(res.estimates) > 1 else None
            values = {label: row for label, row in zip(table.index, table.to_numpy(), strict=True)}
            columns = list(table.columns)  # n, estimate, std_error, low, high
            groups: list[dict[str, Any]] = [
                {"group": label}
                | {
                    c: (int(v) if c == "n" else float(v))
                    for c, v in zip(columns, values[label], strict=True)
                }
                for label in by.report_labels
                if label in values
            ]
            if q.range is not None:  # a number: its mean per answer, in its units
                width = q.range.high - q.range.low
                for g in groups:
                    g |= {c: q.to_units(g[c]) for c in ("estimate", "low", "high")}
                    g["std_error"] *= width
            out.append(
                {
                    "question": q.id,
                    "text": q.text,
                    "answer": q.choice_labels[1],
                    "by": by.id,
                    "by_text": by.text,
                    "pooled_designs": keys is not None,
                    "mean": q.range is not None,
                    "unit": q.range.unit if q.range is not None else "",
                    "groups": groups,
                    "test_equal": None  # one group: nothing to compare
                    if test is None
                    else {
                        "statistic": float(test.statistic),
                        "df": int(test.df),
                        "pvalue": float(test.pvalue),
                    },
                }
            )
    return out
