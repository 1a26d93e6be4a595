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
- What R has no model for is said in the script, in the words of the design's entry in
  the survey designs' registry (:mod:`deniable.collection.model._survey_designs`, which
  also holds every RRreg and GLMMRR mapping below): k-ary designs, numeric mechanisms,
  the list experiment, the extended crosswise model's test of fit (Heck, Hoffmann &
  Moshagen 2018), which ``deniable analyze EXPORT --arms`` gives.

Design parameters map to GLMMRR's (``Forced``: ``p1`` the chance to answer truthfully,
``p2`` the share of forced "yes"; Mangat's device is ``Forced`` with ``p2 = 1``) and to
RRreg's (``FR``: ``p = c(p_no, p_yes)``; ``Mangat``: the non-carriers' chance to
answer truthfully; ``Crosswise``: the innocuous question's prevalence, report 1 =
"same").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...mechanisms import Design
from ..model import SURVEY_DESIGNS, survey_design
from ._export import GROUP_SUFFIX
from ._rscript_common import r_matrix, r_str, r_vector

if TYPE_CHECKING:
    from ..model import Question, Survey

__all__ = ["glmmrr_row", "r_script", "rrreg_call"]


def glmmrr_row(d: Design) -> tuple[str, float, float] | None:
    """GLMMRR's ``(RRmodel, p1, p2)`` of a yes/no design; ``None`` where GLMMRR has no
    model for it (a Warner design with ``p < 0.5``, k-ary designs). Read from the
    design's entry in the survey designs' registry
    (:data:`~deniable.collection.model._survey_designs.SURVEY_DESIGNS`)."""
    key, params = _binary_kary(d)
    entry = SURVEY_DESIGNS.get(key)
    if entry is None or entry.glmmrr is None or d.n_truths != 2:
        return None
    p = entry.glmmrr.p(params)
    return None if p is None else (entry.glmmrr.model, float(p[0]), float(p[1]))


def rrreg_call(d: Design, column: str, data: str) -> str | None:
    """RRreg's ``RRuni(...)`` for a yes/no design (``None`` for direct questioning or a
    design RRreg has no model for), from the design's registry entry."""
    key, params = _binary_kary(d)
    entry = SURVEY_DESIGNS.get(key)
    if entry is None or entry.rrreg is None or entry.rrreg.grouped:
        return None
    p = entry.rrreg.p(params)
    if p is None:
        return None
    return f'RRuni({column}, data = {data}, model = "{entry.rrreg.model}", p = {r_vector(list(p))})'


def _binary_kary(d: Design) -> tuple[str, dict[str, Any]]:
    """The registry key and parameters R is told of: k-ary RR on two answers (the
    server's post-randomization of a direct yes/no answer) is Warner's design with ``p``
    its keep probability (Warner 1965), which GLMMRR and RRreg know."""
    if d.spec_name == "kary-rr" and d.n_truths == 2:
        return "warner", {"p": float(d.matrix[0, 0])}
    if d.spec_name == "matrix" and d.matrix.shape == (2, 2) and d.matrix[1, 1] > d.matrix[1, 0]:
        # a panel question's composed channel (or any yes/no channel whose "yes" is more
        # likely from a "yes"): forced response with Pr(yes | no) = p_yes and
        # Pr(no | yes) = p_no (Boruch 1971)
        return "forced-response", {"p_yes": float(d.matrix[1, 0]), "p_no": float(d.matrix[0, 1])}
    return d.spec_name, d.params


def r_script(survey: Survey | Sequence[Survey], csv_name: str) -> str:
    """The R script of a survey's versions (a panel's waves), reading ``csv_name``.

    Each version's randomized questions: a base-R moment estimate per arm (``Q f``, the
    inverse of the arm's channel applied to the report shares; Chaudhuri & Mukerjee
    1988), and RRreg's and GLMMRR's fits where those packages are installed (the script
    loads a package only when it is installed and a part needs it, and says what it
    skipped); lists and direct answers in base R; and for a panel the change from each
    wave to the next (:func:`._rscript_waves.waves_part`). The script writes
    ``ID.estimates.csv`` (every base-R estimate) and, for a panel, ``ID.change.csv``.

    Parameters
    ----------
    survey : Survey or sequence of Survey
        One version, or every published version of the survey id (each a wave).
    csv_name : str
        The wide CSV export the script reads (beside it).

    Returns
    -------
    str
        R code (UTF-8).

    Raises
    ------
    ValueError
        If ``survey`` is an empty sequence.

    Examples
    --------
    >>> from deniable.collection.model import load_survey
    >>> from deniable.collection.exports import r_script
    >>> code = r_script(load_survey("examples/campus.yaml"), "campus.wide.csv")
    >>> 'requireNamespace("RRreg"' in code and "campus.wide.csv" in code
    True
    """
    from ..model import Survey
    from ._rscript_waves import waves_part

    versions = sorted([survey] if isinstance(survey, Survey) else survey, key=_version)
    if not versions:
        raise ValueError("survey must be a Survey or a non-empty sequence of its versions")
    latest = versions[-1]
    body: list[str] = []
    for v in versions:
        body += _version_part(v)
    body += waves_part(versions)
    out = [
        f"# {latest.id}.R: written by deniable for survey {r_str(latest.id)}, "
        f"versions {', '.join(str(v.version) for v in versions)}",
        f"# ({latest.title}). It fits in R what R can of the study's randomized questions,",
        f"# from {csv_name}: one row per released response; a randomized question's column",
        "# holds the randomized report, never the answer. deniable's own analysis of the",
        f"# same file: deniable analyze {csv_name} --arms (and --question Q --formula ...).",
        "# Base R computes the moment estimates, the lists, the direct answers and the",
        "# waves; RRreg and GLMMRR (CRAN) fit more where they are installed.",
        f"d_all <- read.csv({r_str(csv_name)}, stringsAsFactors = FALSE)",
        'if (!("arm" %in% names(d_all))) d_all$arm <- ""',
        'd_all$arm[is.na(d_all$arm)] <- ""',
    ]
    joined = "\n".join(body)
    for package, used in (("RRreg", "RRuni(" in joined), ("GLMMRR", "RRglm(" in joined)):
        if used:
            flag = f"has_{package.lower()}"
            out += [
                f"{flag} <- requireNamespace({r_str(package)}, quietly = TRUE)",
                f"if ({flag}) suppressPackageStartupMessages(library({package})) else",
                f'  cat("{package} is not installed: its fits are skipped '
                f'(install.packages(\\"{package}\\"))\\n")',
            ]
    out += [
        _BASE,
        *body,
        "",
        "if (length(estimates) > 0) write.csv(do.call(rbind, estimates), "
        f"{r_str(latest.id + '.estimates.csv')}, row.names = FALSE)",
    ]
    return "\n".join(out) + "\n"


#: Base-R helpers: the moment estimate and its printed, collected line.
_BASE = r"""estimates <- list()
moment <- function(codes, Q) {
  # the moment estimate Q f of reports (codes 0..m-1) and its standard errors
  n <- length(codes)
  f <- tabulate(codes + 1, nbins = ncol(Q)) / n
  V <- Q %*% (diag(f, nrow = length(f)) - f %o% f) %*% t(Q) / n
  list(est = drop(Q %*% f), se = sqrt(pmax(diag(V), 0)))
}
show_moment <- function(version, question, arm, codes, Q, answers, pick, scale = 1,
                        shift = 0) {
  # one arm's base-R estimate, printed and kept for ID.estimates.csv
  codes <- codes[!is.na(codes)]
  if (length(codes) == 0) {
    cat(question, ", ", arm, ": no released rows\n", sep = "")
    return(invisible(NULL))
  }
  m <- moment(codes, Q)
  row <- data.frame(version = version, question = question, arm = arm, answer = answers,
                    n = length(codes), estimate = shift + scale * m$est[pick],
                    std_error = scale * m$se[pick], stringsAsFactors = FALSE)
  estimates[[length(estimates) + 1]] <<- row
  cat(question, ", ", arm, ": ", paste(sprintf("%s %.4f (SE %.4f)", row$answer,
      row$estimate, row$std_error), collapse = "; "), " [n = ", row$n[1], "]\n", sep = "")
}"""


def _version(s: Survey) -> int:
    return s.version


def _version_part(survey: Survey) -> list[str]:
    """One version's section: its rows, its direct covariates, each question."""
    v = survey.version
    out = [
        "",
        f"# ---- version {v} ({' '.join(survey.title.split())}) ----",
        f"d <- d_all[d_all$version == {v}, ]",
    ]
    covariates = [q for q in survey.direct_questions if not q.is_list]
    for q in covariates:
        levels = f"0:{len(q.report_labels) - 1}"
        out.append(
            f"d${q.id} <- factor(d${q.id}, levels = {levels}, "
            f"labels = c({', '.join(r_str(label) for label in q.report_labels)}))"
        )
    for q in survey.questions:
        variants = survey.variants(q.id)
        said = [survey_design(name) for name in dict.fromkeys(v.design.name for v in variants)]
        out += [f"# {q.id} ({d.name}, {d.source}): {d.no_r}." for d in said if d.no_r]
        if q.is_list:
            out += ["", *_list_question(survey, q)]
        elif not all(x.is_direct and x.release_channel is None for x in variants):
            out += ["", *_moments(survey, q)]
            if q.range is None and q.mechanism.n_truths == 2:
                out += _question(survey, q, [c.id for c in covariates])
    return out


def _moments(survey: Survey, q: Question) -> list[str]:
    """Each arm's base-R moment estimate of a randomized or post-randomized question."""
    labels = q.choice_labels
    pick, answers = list(range(1, len(labels) + 1)), labels
    scale, shift = 1.0, 0.0
    if q.numeric is not None and q.range is not None:
        pick, answers = [2], ["mean"]
        scale, shift = q.range.high - q.range.low, q.range.low
    arms: list[str | None] = list(survey.arm_names) or [None]
    out = [f"# {q.id}: {' '.join(q.text.split())}"]
    for arm, variant in zip(arms, survey.variants(q.id), strict=True):
        if len(variant.groups) > 1:
            continue  # two randomizers: RRreg's group models below
        where = f"d${q.id}" if arm is None else f"d${q.id}[d$arm == {r_str(arm)}]"
        out.append(
            f"show_moment({survey.version}, {r_str(q.id)}, {r_str(arm or 'all')}, {where}, "
            f"{r_matrix(variant.mechanism.inverse)}, "
            f"c({', '.join(r_str(a) for a in answers)}), c({', '.join(map(str, pick))}), "
            f"{scale!r}, {shift!r})"
        )
    return out


def _question(survey: Survey, q: Question, covariates: list[str]) -> list[str]:
    """A yes/no question's fits in GLMMRR (pooled, and on the direct covariates) and in
    RRreg (per arm, per group of a group design), each run only where its package is
    installed and its rows are not empty."""
    arms = survey.arm_names or [""]
    variants = survey.variants(q.id)
    grouped = len(q.groups) > 1
    column = f"{q.id}{GROUP_SUFFIX}"
    rows = f"rows_{q.id.replace('-', '_')}"
    # a group per row (0 without groups; rep(), so that no rows give no keys)
    group = f"{rows}${column}" if grouped else f"rep(0, nrow({rows}))"
    out = [
        f"{rows} <- d[!is.na(d${q.id}), ]",
        f'{rows}$key <- paste({rows}$arm, {group}, sep = ":")',
    ]
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
        fit = (
            f'RRglm({{f}}, link = "RRlink.logit", RRmodel = RRmodel, p1 = p1, p2 = p2, '
            f"data = {rows}, etastart = rep(0.01, nrow({rows})))"
        )
        out += [
            f"if (has_glmmrr && nrow({rows}) > 0) {{",
            f"  {rows} <- merge({rows}, data.frame(",
            f"    key = c({', '.join(r_str(k) for k in keys)}),",
            f"    RRmodel = c({', '.join(r_str(m) for m in models)}),",
            f"    p1 = {r_vector(p1s)},",
            f"    p2 = {r_vector(p2s)},",
            "    stringsAsFactors = FALSE",
            '  ), by = "key")',
            "  # pooled over every arm and group: GLMMRR's RRglm with each row's design",
            f"  fit <- {fit.format(f=f'{q.id} ~ 1')}",
            f'  cat("{q.id}, pooled prevalence (GLMMRR):", plogis(coef(fit)[[1]]), "\\n")',
        ]
        if covariates:
            out += [
                "  # the logistic regression on the questions asked directly",
                f"  print(summary({fit.format(f=f'{q.id} ~ ' + ' + '.join(covariates))}))",
            ]
        out.append("}")
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
            continue  # its sample proportion is the moment estimate above
        calls: list[tuple[str, str]] = []  # (rows, call on x) of this part
        if len(var.groups) == 1:
            call = rrreg_call(var.mechanism, q.id, "x")
            if call is None:
                out.append(f"# RRreg has no model for {label}: {var.mechanism!r}")
            else:
                calls.append((where, call))
        elif (entry := survey_design(var.design.name)).per_group:
            for g, d in enumerate(var.groups):
                calls.append((f"subset({where}, {column} == {g})", str(rrreg_call(d, q.id, "x"))))
        elif entry.rrreg is not None and entry.rrreg.grouped:  # RRreg's group = argument
            p = r_vector(list(entry.rrreg.p(var.design.params) or ()))
            model = entry.rrreg.model
            fit = f'RRuni({q.id}, data = x, model = "{model}", p = {p}, group = {column} + 1)'
            calls.append((where, fit))
        else:
            out.append(f"# RRreg has no model for {label}: {entry.no_r or var.design.name}")
        for data, call in calls:
            out.append(
                f"local({{ x <- {data}; if (has_rrreg && nrow(x) > 0) print(summary({call})) }})"
                f"  # {label}"
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
            f"w_{q.id.replace('-', '_')} <- {r_vector([float(v) for v in w])}",
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
            "  if (length(treated) < 2 || length(control) < 2) {",
            f'    cat("{q.id}, {label}: fewer than two released counts in a group\\n")',
            "  } else {",
            "    est <- mean(treated) - mean(control)",
            "    se <- sqrt(var(treated) / length(treated) + var(control) / length(control))",
            f'    cat("{q.id}, {label}: difference in means", est, "SE", se, "\\n")',
            "    estimates[[length(estimates) + 1]] <<- data.frame(",
            f"      version = {survey.version}, question = {r_str(q.id)}, "
            f"arm = {r_str(arm or 'all')},",
            '      answer = "difference in means", n = nrow(x), estimate = est, std_error = se)',
            "  }",
            "})",
        ]
    return out
