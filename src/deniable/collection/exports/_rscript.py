"""An R script that fits, from a study's wide export, what R's randomized-response
packages can fit: ``deniable survey export ID --format bundle`` writes it beside the
CSV and the survey file.

- Every randomized yes/no question: GLMMRR's ``RRglm`` (Fox, Veen & Klotzke 2018) with
  each row's design (``RRmodel``, ``p1``, ``p2`` by row, as in GLMMRR's ETHBE example):
  the prevalence pooled over the arms and groups (an intercept-only model) and the
  logistic regression on the questions asked directly.
- Per arm (and per group of an extended crosswise question): RRreg's ``RRuni`` (Heck &
  Moshagen 2018) with that arm's design; an arm that asks the question directly is its
  sample proportion.
- The two-group designs: ``RRuni`` with ``model = "CDM"`` (Clark & Desharnais 1998) or
  ``"SLD"`` (Moshagen, Musch & Erdfelder 2012) and ``group``.
- A list experiment (item count technique): the difference in mean counts between the
  group shown the sensitive item and the control group, with the Neyman standard error
  ``sqrt(s1^2 / n1 + s0^2 / n0)`` (Blair & Imai 2012), in base R, per arm; R's ``list``
  package fits the rest (``ictreg``), which ``deniable analyze`` and the study's
  results give too. A list count is never a covariate: it is a report about the
  sensitive item.
- What R has no model for is said in the script: the extended crosswise model's test of
  fit (Heck, Hoffmann & Moshagen 2018), which ``deniable analyze EXPORT --arms`` gives.

Design parameters map to GLMMRR's (``Forced``: ``p1`` the chance to answer truthfully,
``p2`` the share of forced "yes"; Mangat's device is ``Forced`` with ``p2 = 1``) and to
RRreg's (``FR``: ``p = c(p_no, p_yes)``; ``Mangat``: the non-carriers' chance to
answer truthfully; ``Crosswise``: the innocuous question's prevalence, report 1 =
"same").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ...mechanisms._designs import Design
from ._export import GROUP_SUFFIX

if TYPE_CHECKING:
    from ..model._questions import Question
    from ..model._survey import Survey

__all__ = ["glmmrr_row", "r_script", "rrreg_call"]


def glmmrr_row(d: Design) -> tuple[str, float, float] | None:
    """GLMMRR's ``(RRmodel, p1, p2)`` of a yes/no design; ``None`` where GLMMRR has no
    model for it (a Warner design with ``p < 0.5``, k-ary designs). Read from the
    design's registry key and parameters."""
    key, p = _binary_kary(d)
    if key == "direct" and d.n_truths == 2:
        return "DQ", 0.0, 0.0
    if key == "warner":
        return ("Warner", p["p"], 0.0) if p["p"] >= 0.5 else None
    if key == "forced-response":
        forced = p["p_yes"] + p["p_no"]
        return "Forced", 1.0 - forced, p["p_yes"] / forced if forced > 0 else 0.0
    if key == "mangat":  # non-carriers forced to "yes" with 1 - p
        return "Forced", p["p"], 1.0
    if key == "unrelated-question":
        return "UQM", p["p"], p["innocuous_prevalence"]
    if key in ("crosswise", "triangular"):
        return key.capitalize(), p["p"], 0.0
    if key == "kuk" and p["draws"] == 1:
        return "Kuk", p["p_carrier"], p["p_noncarrier"]
    return None


#: RRreg's model name and ``p`` vector of each design key (RRreg's parameter order).
_RRREG = {
    "warner": ("Warner", ("p",)),
    "forced-response": ("FR", ("p_no", "p_yes")),
    "mangat": ("Mangat", ("p",)),
    "unrelated-question": ("UQTknown", ("p", "innocuous_prevalence")),
    "crosswise": ("Crosswise", ("p",)),
    "triangular": ("Triangular", ("p",)),
    "kuk": ("Kuk", ("p_carrier", "p_noncarrier")),
}


def rrreg_call(d: Design, column: str, data: str) -> str | None:
    """RRreg's ``RRuni(...)`` for a yes/no design (``None`` for direct questioning or a
    design RRreg has no model for)."""
    key, params = _binary_kary(d)
    if key not in _RRREG or (key == "kuk" and params["draws"] != 1):
        return None
    model, names = _RRREG[key]
    p = [float(params[name]) for name in names]
    return f'RRuni({column}, data = {data}, model = "{model}", p = {_vector(p)})'


def _binary_kary(d: Design) -> tuple[str, dict[str, Any]]:
    """The registry key and parameters R is told of: k-ary RR on two answers (the
    server's post-randomization of a direct yes/no answer) is Warner's design with ``p``
    its keep probability (Warner 1965), which GLMMRR and RRreg know."""
    if d.spec_name == "kary-rr" and d.n_truths == 2:
        return "warner", {"p": float(d.matrix[0, 0])}
    return d.spec_name, d.params


def _vector(values: list[float]) -> str:
    return "c(" + ", ".join(repr(float(v)) for v in values) + ")"


def _str(text: str) -> str:
    """An R string literal (JSON's escapes are R's for these characters)."""
    return json.dumps(text, ensure_ascii=False)


def r_script(survey: Survey, csv_name: str) -> str:
    """The R script for one version of a survey, reading ``csv_name`` (the wide export).

    Parameters
    ----------
    survey : Survey
        One version.
    csv_name : str
        The wide CSV export the script reads (beside it).

    Returns
    -------
    str
        R code (UTF-8) that needs the CRAN packages RRreg and GLMMRR.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.exports import r_script
    >>> code = r_script(load_survey("examples/campus.yaml"), "campus.wide.csv")
    >>> "library(RRreg)" in code and "campus.wide.csv" in code
    True
    """
    sid, v = survey.id, survey.version
    out = [
        f"# {sid}.R: written by deniable for survey {_str(sid)}, version {v}",
        f"# ({survey.title}). It fits in R what R can of the study's randomized questions,",
        f"# from {csv_name}: one row per released response; a randomized question's column",
        "# holds the randomized report, never the answer. deniable's own analysis of the",
        f"# same file: deniable analyze {csv_name} --arms (and --question Q --formula ...).",
        '# Needs the CRAN packages RRreg and GLMMRR: install.packages(c("RRreg", "GLMMRR"))',
        "suppressPackageStartupMessages({",
        "  library(RRreg)",
        "  library(GLMMRR)",
        "})",
        f"d <- read.csv({_str(csv_name)}, stringsAsFactors = FALSE)",
        f"d <- d[d$version == {v}, ]",
        'if (!("arm" %in% names(d))) d$arm <- ""',
        'd$arm[is.na(d$arm)] <- ""',
        "",
        "# the questions asked directly, with their answer labels",
    ]
    covariates = [q for q in survey.direct_questions if not q.is_list]
    for q in covariates:
        levels = f"0:{len(q.report_labels) - 1}"
        out.append(
            f"d${q.id} <- factor(d${q.id}, levels = {levels}, "
            f"labels = c({', '.join(_str(label) for label in q.report_labels)}))"
        )
    for q in survey.questions:
        variants = survey.variants(q.id)
        if q.is_list:
            out += ["", *_list_question(survey, q)]
            continue
        if all(x.is_direct for x in variants) or q.range is not None or q.mechanism.n_truths != 2:
            continue
        out += ["", *_question(survey, q, [c.id for c in covariates])]
    return "\n".join(out) + "\n"


def _question(survey: Survey, q: Question, covariates: list[str]) -> list[str]:
    arms = survey.arm_names or [""]
    variants = survey.variants(q.id)
    grouped = len(q.groups) > 1
    out = [f"# {q.id}: {q.text}"]
    column = f"{q.id}{GROUP_SUFFIX}"
    rows = f"rows_{q.id.replace('-', '_')}"
    group = f"{rows}${column}" if grouped else "0"
    out.append(f"{rows} <- d[!is.na(d${q.id}), ]")
    out.append(f'{rows}$key <- paste({rows}$arm, {group if grouped else 0}, sep = ":")')
    keys, models, p1s, p2s = [], [], [], []
    missing = []
    for arm, var in zip(arms, variants, strict=True):
        for g, d in enumerate(var.groups):
            row = glmmrr_row(d)
            if row is None:
                missing.append(f"{arm or 'all'}: {d!r}")
                continue
            keys.append(f"{arm}:{g}")
            models.append(row[0])
            p1s.append(row[1])
            p2s.append(row[2])
    if not missing:
        out += [
            f"{rows} <- merge({rows}, data.frame(",
            f"  key = c({', '.join(_str(k) for k in keys)}),",
            f"  RRmodel = c({', '.join(_str(m) for m in models)}),",
            f"  p1 = {_vector(p1s)},",
            f"  p2 = {_vector(p2s)},",
            "  stringsAsFactors = FALSE",
            '), by = "key")',
            "# pooled over every arm and group: GLMMRR's RRglm with each row's design",
            f'fit <- RRglm({q.id} ~ 1, link = "RRlink.logit", RRmodel = RRmodel, p1 = p1, '
            f"p2 = p2, data = {rows}, etastart = rep(0.01, nrow({rows})))",
            f'cat("{q.id}, pooled prevalence:", plogis(coef(fit)[[1]]), "\\n")',
        ]
        if covariates:
            rhs = " + ".join(covariates)
            out += [
                "# the logistic regression on the questions asked directly",
                f'fit <- RRglm({q.id} ~ {rhs}, link = "RRlink.logit", RRmodel = RRmodel, '
                f"p1 = p1, p2 = p2, data = {rows}, etastart = rep(0.01, nrow({rows})))",
                "print(summary(fit))",
            ]
    else:
        out.append(f"# GLMMRR has no model for: {'; '.join(missing)}")
    same = len({x.content_digest for x in variants}) == 1
    parts = (
        [("all", variants[0], rows)]
        if same or not survey.arms
        else [
            (f"arm {arm}", var, f'subset({rows}, arm == "{arm}")')
            for arm, var in zip(arms, variants, strict=True)
        ]
    )
    for label, var, where in parts:
        if var.is_direct and var.release_channel is None:
            out.append(f'cat("{q.id}, {label} (asked directly):", mean({where}${q.id}), "\\n")')
        elif len(var.groups) == 1:
            call = rrreg_call(var.mechanism, q.id, where)
            out.append(f"print(summary({call}))  # {label}" if call else f"# RRreg: no {label}")
        elif var.design.name == "extended-crosswise":
            for g, d in enumerate(var.groups):
                sub = f"subset({where}, {column} == {g})"
                out.append(f"print(summary({rrreg_call(d, q.id, sub)}))  # {label}, group {g}")
            out += [
                "# R has no model for the extended crosswise model's test of fit (Heck,",
                "# Hoffmann & Moshagen 2018): deniable analyze FILE --arms gives its G2 on 1 df.",
            ]
        else:  # the cheating detection model and the stochastic lie detector
            model = "CDM" if var.design.name == "cheating-detection" else "SLD"
            p = _vector([var.design.params["p1"], var.design.params["p2"]])
            out.append(
                f'print(summary(RRuni({q.id}, data = {where}, model = "{model}", p = {p}, '
                f"group = {column} + 1)))  # {label}"
            )
    return out


def _list_question(survey: Survey, q: Question) -> list[str]:
    """A list experiment's difference in means with its Neyman standard error, per arm
    (base R: the column holds the count, its group column the list shown)."""
    column = f"{q.id}{GROUP_SUFFIX}"
    rows = f"rows_{q.id.replace('-', '_')}"
    out = [
        f"# {q.id}: a list experiment of {len(q.items or ())} control items; group 1 is also shown",
        f"# the sensitive item ({' '.join(str(q.sensitive_item).split())}).",
        "# Difference in means with its Neyman SE (Blair & Imai 2012); R's list package",
        "# fits the rest (list::ictreg).",
        f"{rows} <- d[!is.na(d${q.id}) & !is.na(d${column}), ]",
    ]
    arms = survey.arm_names if survey.arms else [""]
    count = f"x${q.id}"
    channel = q.release_channel
    if channel is not None:  # each stored count r stands for w[r], w = P^-T (0..J+1)
        w = np.linalg.solve(channel.matrix.T, np.arange(channel.n_truths, dtype=np.float64))
        out += [
            f"# the server post-randomized each count before storing it ({channel.spec}):",
            "# w[r + 1] has expectation the true count given a stored count r, so the",
            "# difference in means of w is unbiased (deniable's list_difference_in_means).",
            f"w_{q.id.replace('-', '_')} <- {_vector([float(v) for v in w])}",
        ]
        count = f"w_{q.id.replace('-', '_')}[x${q.id} + 1]"
    for arm in arms:
        where = f'subset({rows}, arm == "{arm}")' if arm else rows
        label = f"arm {arm}" if arm else "all"
        out += [
            "local({",
            f"  x <- {where}",
            f"  y <- {count}",
            f"  treated <- y[x${column} == 1]",
            f"  control <- y[x${column} == 0]",
            "  est <- mean(treated) - mean(control)",
            "  se <- sqrt(var(treated) / length(treated) + var(control) / length(control))",
            f'  cat("{q.id}, {label}: difference in means", est, "SE", se, "\\n")',
            "})",
        ]
    return out
