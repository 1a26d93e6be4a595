"""HTML pages (Jinja2 templates in ``templates/``): views that only render.

The respondent page randomizes in the browser (``web/respond.js``); the results page
renders the survey's results (:func:`deniable.collection.study.survey_results`,
numbers and warnings from the library) as a table and plots.
"""

from __future__ import annotations

import base64
import io
import json
import os
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape

from ...plots import headless_figure, plot_intervals
from ..exports import FORMATS
from ..model import LANGUAGES, MIN_RELEASE, SMALL_RELEASE, Survey, catalog
from ..store import Store
from ..study import covariate_ids, regressable, survey_results
from ._security import CSP

__all__ = [
    "PAGE_HEADERS",
    "dashboard_refresh",
    "error_page",
    "forest_labels",
    "home_page",
    "login_page",
    "respondent_page",
    "results_page",
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
        small_release=survey.min_release if survey.min_release < SMALL_RELEASE else None,
        release_floor=SMALL_RELEASE,
        release_default=MIN_RELEASE,
        no_lifetime_budget=survey.no_lifetime_budget,
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
    rows = [row for q in res["questions"] for row in _table_rows(q)]
    warnings = [f"{q['id']}: {w}" for q in res["questions"] for w in q.get("warnings", [])]
    images = _plots(rows, store.released.timeline(survey.id))
    change_images = change_plots(res.get("wave_change", []), res.get("confidence_level", 0.95))
    status = store.status(survey.id)
    template = _TEMPLATES.get_template("results.html")
    page = template.render(
        survey=survey,
        results=res,
        rows=rows,
        images=images,
        change_images=change_images,
        warnings=warnings,
        status=status,
        methods=sorted({r["method"] for r in rows if r["method"]}),
        formats=[f for f in FORMATS if f.server],
        regressable=regressable(survey),
        covariates=covariate_ids(survey),
        chosen=on or [],
        refresh=dashboard_refresh(),
    )
    return page, res


def _table_rows(q: dict[str, Any]) -> list[dict[str, Any]]:
    """A question's rows of the results table: a numeric question's mean in its units;
    else a row per category ("yes" only for a binary question)."""
    if "range" in q:  # numeric: one row, the mean in the question's units
        unit = f", {q['unit']}" if q["unit"] else ""
        row = {
            "name": f"{q['text']} (mean in [{', '.join(q['categories'])}]{unit})",
            "id": q["id"],
            "n": q["n"],
            "design": q["design"],
            "epsilon": q["epsilon"],
            "missing": q.get("missing", 0),
            "method": q["interval"]["name"] if "interval" in q else "",
            "numeric": True,
            "range": q["range"],
            "unit": q["unit"],
            "estimate": None,
        }
        return [row | (_flat_mean(q["mean"]) if q["released"] and "mean" in q else {})]
    if "list" in q:  # a list experiment: one row, the sensitive item's prevalence
        li = q["list"]
        row = {
            "name": f"{q['text']} (list experiment: {li['sensitive_item']})",
            "id": q["id"],
            "category": "sensitive item",
            "n": q["n"],
            "design": q["design"],
            "epsilon": "sent as given",
            "missing": 0,
            "method": "Wald (difference in means)",
            "estimate": li.get("estimate"),
            "list": li,
        }
        if "estimate" in li:
            ci = li["interval"]
            row |= {"std_error": li["std_error"], "low": ci["low"], "high": ci["high"],
                    "mle": li["mle"] or 0.0}  # fmt: skip
        return [row]
    rows = []
    for j, cat in enumerate(q["categories"]):
        if len(q["categories"]) == 2 and j == 0:
            continue  # binary: show "yes" only
        row = {
            "name": f"{q['text']} ({cat})",
            "id": q["id"],
            "category": cat,
            "n": q["n"],
            "design": q["design"],
            "epsilon": "sent as given" if q.get("direct") else q["epsilon"],
            "estimate": None,
            "missing": q.get("missing", 0),
            "method": q["interval"]["name"] if "interval" in q else "",
        }
        if q["released"] and "estimate" in q:  # a pooled question may have none yet
            row |= {
                "estimate": q["estimate"][j],
                "mle": q["mle"][j],
                "std_error": q["std_error"][j],
                "low": q["interval"]["low"][j],
                "high": q["interval"]["high"][j],
            }
        rows.append(row)
    return rows


def _plots(rows: list[dict[str, Any]], timeline: list[Any]) -> list[tuple[str, str]]:
    """The page's plots (title, PNG data URL): the estimates with their intervals, the
    means in their ranges, and the responses released by the hour."""
    images = []
    shown = [r for r in rows if r["estimate"] is not None and not r.get("numeric")]
    if shown:
        e = np.array([r["estimate"] for r in shown])
        # the unbiased estimate may fall outside [0, 1] while its interval is clipped to
        # it: plot_intervals draws them apart (no negative error bars)
        fig = plot_intervals(
            forest_labels(shown), e, [r["low"] for r in shown], [r["high"] for r in shown],
            xlim=(min(-0.05, float(e.min()) - 0.05), max(1.05, float(e.max()) + 0.05)),
            xlabel="estimated prevalence with 95% confidence interval",
        )  # fmt: skip
        images.append(("Estimates with 95% confidence intervals", _png(fig)))
    means = [r for r in rows if r.get("numeric") and r["estimate"] is not None]
    if means:
        images.append(
            ("Means with 95% confidence intervals, each in its range", _means_plot(means))
        )
    if timeline:
        fig = headless_figure(figsize=(7, 2.6))
        ax = fig.subplots()
        xs = np.array([b for b, _ in timeline], dtype="datetime64[s]")
        width = np.timedelta64(3600, "s")
        ax.bar(xs, [n for _, n in timeline], width=width * 0.9, align="edge", color="C1")
        ax.set_ylabel("responses released per hour")
        fig.autofmt_xdate()
        images.append(("Responses released, by the hour of their release", _png(fig)))
    return images


def change_plots(changes: list[dict[str, Any]], level: float) -> list[tuple[str, str, str]]:
    """One plot per question asked in several waves: each change between consecutive
    waves with its interval, per arm and pooled (a row per answer shown), so a glance
    tells which changes exclude 0.

    Parameters
    ----------
    changes : list of dict
        The results' ``wave_change`` entries (:func:`deniable.collection.store.
        wave_analysis`).
    level : float in (0, 1)
        Their intervals' confidence level.

    Returns
    -------
    list of (str, str, str)
        ``(question id, caption, PNG data URL)``, in the order the questions appear.
    """
    by_question: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for c in changes:
        for r in c["rows"]:
            label = f"{c['first']}→{c['second']} · {r['arm']} · {_short(str(r['answer']), 16)}"
            by_question.setdefault(c["question"], []).append((label, r))
    out = []
    for question, rows in by_question.items():
        fig = plot_intervals(
            [label for label, _ in rows],
            [r["difference"] for _, r in rows],
            [r["low"] for _, r in rows],
            [r["high"] for _, r in rows],
            colors=["C3" if r["arm"] == "pooled" else "C0" for _, r in rows],
            xlabel=f"change between waves with {100 * level:.0f}% interval (pooled in red)",
            title=question,
        )
        caption = f"{question}: the change between waves, per arm and pooled"
        out.append((question, caption, _png(fig)))
    return out


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


def _flat_mean(mean: dict[str, Any]) -> dict[str, Any]:
    """A released mean (``RangeMean.to_dict`` and ``mle``) as a table row's cells."""
    return {
        "estimate": mean["estimate"],
        "std_error": mean["std_error"],
        "low": mean["interval"]["low"],
        "high": mean["interval"]["high"],
        "mle": mean["mle"],
    }


def _means_plot(rows: list[dict[str, Any]]) -> str:
    """A panel per numeric question: its mean and interval on the axis of its own range
    and unit (the ``range``/``unit`` of the results), as a data URL."""
    fig = headless_figure(figsize=(7, 1.1 * len(rows) + 0.6))
    axes = fig.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, r in zip(axes, rows, strict=True):
        low, high = r["range"]
        plot_intervals(
            [_short(r["id"])], [r["estimate"]], [r["low"]], [r["high"]], reference=None,
            colors=["C2"], xlim=(low - 0.02 * (high - low), high + 0.02 * (high - low)),
            xlabel=r["unit"] or "value", ax=ax,
        )  # fmt: skip
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
