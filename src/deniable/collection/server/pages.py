"""HTML pages (Jinja2 templates in ``templates/``) and the results they show.

The respondent page randomizes in the browser (``web/respond.js``); the results page
shows each question's estimate, standard error and interval, and two plots.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import warnings
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from ...errors import IntervalCoverageWarning
from ...estimation.estimators import estimate
from ...estimation.results import FLAG_Z
from ...planning.plots import headless_figure
from ...tallies import Tally
from ..export import wide_frame
from ..i18n import LANGUAGES, catalog
from ..storage import Store
from ..study import (
    arm_analysis,
    covariate_ids,
    design_keys,
    has_variants,
    regressable,
    regression,
    study_frame,
)
from ..survey import Survey
from .security import CSP

__all__ = [
    "FLAG_Z",
    "INTERVAL_NAMES",
    "PAGE_HEADERS",
    "dashboard_refresh",
    "error_page",
    "home_page",
    "login_page",
    "pooled_tallies",
    "respondent_page",
    "results_page",
    "survey_results",
]

#: Headers of the respondent page: no caching, no referrer, a strict CSP with no forms.
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": CSP.replace("form-action 'self'", "form-action 'none'"),
}

_TEMPLATES = Environment(
    loader=PackageLoader("deniable.collection.server", "templates"),
    autoescape=select_autoescape(["html"]),
    keep_trailing_newline=True,
)


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


def arm_counts(frame: pd.DataFrame, survey: Survey) -> dict[str, Any] | None:
    """The released responses per arm against the arms' weights: the counts, the
    expected counts and Pearson's chi-square test of the weights (a sample-ratio test:
    a respondent who re-draws an arm, by clearing storage or on another device, to
    avoid a direct question makes the counts depart from the weights), from the wide
    export ``frame``; ``None`` without arms."""
    from scipy import stats

    if not survey.arms:
        return None
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
    pooled = store.tallies(survey)
    digests = {q.id: q.content_digest for q in survey.questions}
    for other in store.versions(survey.id):
        if other.version == survey.version:
            continue
        tallies = store.tallies(other)
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
    crowds of at least ``survey.min_release`` (:mod:`deniable.collection.staging`);
    ``waiting`` counts those not yet released. Before a version's first release each
    question says ``released: false`` and how many more responses are ``missing``, and
    carries no counts and no estimate. A released question carries the unbiased (moment)
    estimate with its standard error and interval (``interval_method`` and its name),
    and beside it the constrained maximum-likelihood estimate (``mle``, inside the
    simplex); a warning says what an estimate outside [0, 1] or a standard error of 0
    means. With ``pooled`` each question counts the responses of every version that asks
    it unchanged (:func:`pooled_tallies`). A numeric question also carries its ``range``
    and ``unit`` and, once released, its ``mean`` (estimate, standard error, interval and
    MLE in the question's units). With ``regress`` (a randomized yes/no question) and
    ``on`` (direct questions), ``regression`` holds its logistic regression on them
    (:func:`deniable.collection.study.regression`).

    Raises
    ------
    ValueError
        For a ``regress`` or ``on`` that does not fit the survey.
    """
    tallies = pooled_tallies(store, survey) if pooled else store.tallies(survey)
    waiting = store.waiting(survey.id).get(survey.version, 0)
    released = store.released_count(survey.id, survey.version)
    out: dict[str, Any] = {
        "survey": survey.id,
        "version": survey.version,
        "pooled": pooled,
        "title": survey.title,
        "responses": released + waiting,
        "released": released,
        "waiting": waiting,
        "confidence_level": level,
        "min_release": survey.min_release,
        "questions": [],
    }
    study = None
    read: list[pd.DataFrame] = []  # the wide export, read once if anything needs it

    def wide() -> pd.DataFrame:
        if not read:
            read.append(wide_frame(store, survey.id))
        return read[0]

    variants = {q.id for q in survey.questions if has_variants(survey, q.id)}
    if variants and released:
        versions = store.versions(survey.id) if pooled else None
        found = arm_analysis(wide(), survey, level, versions)
        study = {s["question"]: s for s in found}
        out["study"] = list(study.values())
        out["arms"] = arm_counts(wide(), survey)
    for q in survey.questions:
        tally = tallies[q.id]
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
            item["missing"] = max(1, survey.min_release - waiting)
            out["questions"].append(item)
            continue
        if q.id in variants:  # several designs: the estimate pooled over them
            pooled_row = study[q.id]["pooled"] if study else None
            item["design"] = "by arm and group" if len(q.groups) > 1 else "by arm"
            if pooled_row is not None:
                p, lo, hi = pooled_row["prevalence"], pooled_row["low"], pooled_row["high"]
                item |= {
                    "prevalence": [1 - p, p],
                    "std_error": [pooled_row["std_error"]] * 2,
                    "interval_method": "normal",
                    "interval_name": POOLED_NAME,
                    "low": [1 - hi, lo],
                    "high": [1 - lo, hi],
                    "mle": [1 - p, p],
                }
            out["questions"].append(item)
            continue
        est = estimate(q.mechanism, tally)
        ci = est.confidence_interval(level)
        mle = estimate(q.mechanism, tally, method="mle")
        item |= {
            "counts": tally.counts.tolist(),
            "prevalence": est.estimate.tolist(),
            "std_error": est.std_error.tolist(),
            "interval_method": est.default_interval_method,
            "interval_name": INTERVAL_NAMES.get(est.default_interval_method, ""),
            "low": ci.low.tolist(),
            "high": ci.high.tolist(),
            "mle": mle.estimate.tolist(),
        }
        if q.numeric is not None:
            item["mean"] = q.mean_from(est, ci) | {"mle": q.to_units(mle.estimate[1])}
        notes = []
        outside = est.implausible()
        if outside.any():
            cats = [c for c, o in zip(q.choice_labels, outside, strict=True) if o]
            what = (
                f"the mean outside [{', '.join(q.choice_labels)}]"
                if q.numeric is not None
                else f"estimate outside [0, 1] for {', '.join(cats)}"
            )
            item["warning"] = (
                f"{what} by more than {FLAG_Z} standard errors: check for flooding or "
                "respondents not following the design"
            )
        elif ((est.estimate < 0) | (est.estimate > 1)).any():
            notes.append(
                "the unbiased estimate lies outside [0, 1] within sampling error: the true "
                "share is near the boundary; the constrained estimate (MLE) is inside"
            )
        if q.control == "zero" and est.std_error[1] > 0:  # nobody carries it
            from scipy import stats

            share = float(est.estimate[1])
            p_zero = float(stats.norm.sf(share / float(est.std_error[1])))
            item["control"] = {"estimate": share, "pvalue": p_zero}
            notes.append(
                "a zero-prevalence control: nobody carries it, so its estimate measures "
                f"false positives (one-sided p = {p_zero:.3g} against 0)"
            )
        if (est.std_error == 0).any():
            notes.append(
                "a standard error of 0 means every report fell in one category, where the "
                "plug-in variance vanishes; the interval still reflects the sample size"
            )
        if notes:
            item["note"] = "; ".join(notes)
        out["questions"].append(item)
    if survey.direct_questions and not pooled and released:
        out["breakdowns"] = breakdowns(wide(), survey, level)
    if regress is not None:
        if not released:
            raise ValueError("regress: nothing is released yet")
        out["regression"] = regression(wide(), survey, regress, on or [], level)
    return out


def breakdowns(frame: pd.DataFrame, survey: Survey, level: float) -> list[dict[str, Any]]:
    """Each randomized yes/no question by each direct question: the prevalence of its
    second answer per answer of the direct one, with its interval and a test of equal
    prevalence (:func:`~deniable.analysis.subgroup_prevalence`); a numeric question's
    mean per answer in its units (``mean: true``; the test of equal means). The rows are the
    version's released responses after small cells are recoded to missing
    (:func:`~deniable.collection.reading.suppress_small_cells`), those missing either
    answer left out: the rows ``deniable analyze EXPORT --question Q --by D`` reads
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
            columns = list(table.columns)  # n, prevalence, std_error, low, high
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
                    g |= {c: q.to_units(g[c]) for c in ("prevalence", "low", "high")}
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


def respondent_page(survey: Survey, view: dict[str, Any] | None = None, lang: str = "en") -> str:
    """The respondent page of ``survey`` in ``lang``: its JSON view (default
    :meth:`Survey.respondent_view`) and the message catalog embedded with ``<`` escaped."""
    view = view or survey.respondent_view(lang)
    data = json.dumps(view).replace("<", "\\u003c")
    messages = catalog(lang)
    return _TEMPLATES.get_template("respond.html").render(
        title=view["title"],
        description=view["description"],
        consent=view["consent"],
        control_arm=view.get("control_arm", False),
        survey_json=data,
        messages_json=json.dumps(messages).replace("<", "\\u003c"),
        t=messages,
        lang=lang,
        languages=[(code, catalog(code)["lang_name"]) for code in LANGUAGES],
    )


def login_page(target: str, failed: bool = False) -> str:
    """The analyst's login form; it posts the token to ``/login`` (never in a URL)."""
    return _TEMPLATES.get_template("login.html").render(target=target, failed=failed)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def results_page(
    store: Store,
    survey: Survey,
    pooled: bool = False,
    regress: str | None = None,
    on: list[str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The analyst's results page (status, a table, the breakdowns by direct questions,
    plots by matplotlib of the estimates, the means and the timeline, the version picker
    and the downloads; it reloads itself every 30 seconds) and the results it releases
    (:func:`survey_results`)."""
    res = survey_results(store, survey, 0.95, pooled, regress, on)
    rows: list[dict[str, Any]] = []
    for q in res["questions"]:
        if "range" in q:  # numeric: one row, the mean in the question's units
            unit = f", {q['unit']}" if q["unit"] else ""
            rows.append(
                {
                    "name": f"{q['text']} (mean in [{', '.join(q['categories'])}]{unit})",
                    "id": q["id"],
                    "n": q["n"],
                    "design": q["design"],
                    "epsilon": q["epsilon"],
                    "missing": q.get("missing", 0),
                    "method": q.get("interval_name", ""),
                    "numeric": True,
                    "range": q["range"],
                    "unit": q["unit"],
                    "estimate": None,
                }
                | (q["mean"] if q["released"] else {})
            )
            continue
        for j, cat in enumerate(q["categories"]):
            if len(q["categories"]) == 2 and j == 0:
                continue  # binary: show "yes" only
            row: dict[str, Any] = {
                "name": f"{q['text']} ({cat})",
                "id": q["id"],
                "category": cat,
                "n": q["n"],
                "design": q["design"],
                "epsilon": "sent as given" if q.get("direct") else q["epsilon"],
                "estimate": None,
                "missing": q.get("missing", 0),
                "method": q.get("interval_name", ""),
            }
            if q["released"]:
                row |= {
                    "estimate": q["prevalence"][j],
                    "mle": q["mle"][j],
                    "std_error": q["std_error"][j],
                    "low": q["low"][j],
                    "high": q["high"][j],
                }
            rows.append(row)
    warnings = [f"{q['id']}: {q['warning']}" for q in res["questions"] if "warning" in q]
    images = []
    shown = [r for r in rows if r["estimate"] is not None and not r.get("numeric")]
    if shown:
        fig = headless_figure(figsize=(7, 0.45 * len(shown) + 1.2))
        ax = fig.subplots()
        y = np.arange(len(shown))[::-1]
        e = np.array([r["estimate"] for r in shown])
        # the unbiased estimate may fall outside [0, 1] while its interval is clipped to
        # it: draw the interval and the estimate separately (no negative error bars)
        ax.hlines(y, [r["low"] for r in shown], [r["high"] for r in shown], color="C0", lw=2)
        ax.plot(e, y, "o", color="C0")
        ax.set_yticks(y, forest_labels(shown))
        ax.set_xlim(min(-0.05, float(e.min()) - 0.05), max(1.05, float(e.max()) + 0.05))
        ax.axvline(0, color="0.8", lw=0.8)
        ax.set_xlabel("estimated prevalence with 95% confidence interval")
        images.append(("Estimates with 95% confidence intervals", _png(fig)))
    means = [r for r in rows if r.get("numeric") and r["estimate"] is not None]
    if means:
        images.append(("Means with 95% confidence intervals, each in its range", means_plot(means)))
    timeline = store.timeline(survey.id)
    if timeline:
        fig = headless_figure(figsize=(7, 2.6))
        ax = fig.subplots()
        xs = np.array([b for b, _ in timeline], dtype="datetime64[s]")
        width = np.timedelta64(store.bucket_seconds, "s")
        ax.bar(xs, [n for _, n in timeline], width=width * 0.9, align="edge", color="C1")
        ax.set_ylabel(f"responses per {store.bucket_seconds // 60} min")
        fig.autofmt_xdate()
        images.append(("Responses over time (coarse buckets)", _png(fig)))
    notes = [f"{q['id']}: {q['note']}" for q in res["questions"] if "note" in q]
    status = store.status(survey.id)
    template = _TEMPLATES.get_template("results.html")
    page = template.render(
        survey=survey,
        results=res,
        rows=rows,
        images=images,
        warnings=warnings,
        notes=notes,
        status=status,
        methods=sorted({r["method"] for r in rows if r["method"]}),
        regressable=regressable(survey),
        covariates=covariate_ids(survey),
        chosen=on or [],
        refresh=dashboard_refresh(),
    )
    return page, res


def dashboard_refresh() -> int:
    """Seconds between the results page's reloads: ``DENIABLE_DASHBOARD_REFRESH`` or 30.

    Raises
    ------
    ValueError
        If the variable is not an integer in 1..3600.
    """
    raw = os.environ.get("DENIABLE_DASHBOARD_REFRESH", "30")
    if not raw.isdigit() or not 1 <= int(raw) <= 3600:
        raise ValueError(f"DENIABLE_DASHBOARD_REFRESH must be 1..3600 seconds, got {raw!r}")
    return int(raw)


def means_plot(rows: list[dict[str, Any]]) -> str:
    """A panel per numeric question: its mean and interval on the axis of its own range
    and unit (the ``range``/``unit`` of the results), as a data URL."""
    fig = headless_figure(figsize=(7, 1.1 * len(rows) + 0.6))
    axes = fig.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, r in zip(axes, rows, strict=True):
        low, high = r["range"]
        ax.hlines([0], [r["low"]], [r["high"]], color="C2", lw=2)
        ax.plot([r["estimate"]], [0], "o", color="C2")
        ax.set_xlim(low - 0.02 * (high - low), high + 0.02 * (high - low))
        ax.set_yticks([0], [_short(r["id"])])
        ax.set_xlabel(r["unit"] or "value", labelpad=1)
    return _png(fig)


def forest_labels(rows: list[dict[str, Any]]) -> list[str]:
    """The forest plot's label of each row: its question's id and its category (a long
    question's first words, cut, would read the same for every category), at most 40
    characters."""
    return [_short(f"{r['id']}: {r['category']}") for r in rows]


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def error_page(status: int, message: str) -> str:
    """An HTML error page for browsers (the API answers the JSON error shape)."""
    return _TEMPLATES.get_template("error.html").render(status=status, message=message)


def home_page(surveys: list[dict[str, Any]] | None) -> str:
    """The landing page; with ``surveys`` (signed in) the survey list."""
    return _TEMPLATES.get_template("home.html").render(surveys=surveys)
