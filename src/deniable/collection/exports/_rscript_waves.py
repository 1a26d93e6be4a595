"""The waves part of the study bundle's R script: each wave's prevalence and the change
from each wave to the next, per arm and pooled, in base R.

It is the computation the study's results show (:func:`deniable.collection.store.
wave_analysis`): each arm's change on like cells (:func:`deniable.analysis.
wave_change_by_cell`: the key cells with reports in both waves, each wave's moment
estimates ``Q f`` per cell read at the cells' common mix; Kitagawa 1964's direct
standardization; the variance ``sum_c w_c^2 (V_1c + V_2c)``), the arms pooled by their
respondents, a yes/no question's second answer, a numeric question's mean in its units.
Each arm's ``Q``, the inverse of its composed channel, is written into the script, so
nothing but base R is needed; the script writes the table to ``ID.change.csv`` and
prints it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._rscript_common import r_matrix, r_str, r_vector

if TYPE_CHECKING:
    from ..model import Survey

__all__ = ["waves_part"]

#: The base-R functions of the change on like cells and of the arms' pooling (the
#: script's ``moment``, :mod:`._rscript`, gives each cell's estimate).
_FUNCTIONS = r"""key_cell <- function(x, keys) {
  # each row's key cell: its key answers joined ("-" where missing)
  if (length(keys) == 0) return(rep("all", nrow(x)))
  cells <- lapply(keys, function(k) ifelse(is.na(x[[k]]), "-", as.character(x[[k]])))
  do.call(paste, c(cells, sep = "|"))
}
change_by_cell <- function(a, b, cells_a, cells_b, Q) {
  # each wave at the common mix of the key cells both waves hold (deniable's
  # wave_change_by_cell); NULL when no cell has reports in both
  common <- intersect(unique(cells_a), unique(cells_b))
  if (length(common) == 0) return(NULL)
  counts <- sapply(common, function(k) sum(cells_a == k) + sum(cells_b == k))
  w <- counts / sum(counts)
  waves <- lapply(list(list(a, cells_a), list(b, cells_b)), function(part) {
    est <- 0; var <- 0
    for (i in seq_along(common)) {
      m <- moment(part[[1]][part[[2]] == common[i]], Q)
      est <- est + w[i] * m$est
      var <- var + (w[i] * m$se)^2
    }
    list(est = est, se = sqrt(var))
  })
  n <- c(sum(cells_a %in% common), sum(cells_b %in% common))
  list(first = waves[[1]]$est, first_se = waves[[1]]$se, second = waves[[2]]$est,
       second_se = waves[[2]]$se, n = n, total = c(length(a), length(b)),
       cells = length(common))
}
pool_arms <- function(parts) {
  # the arms' estimates of each wave weighted by their respondents (deniable's _pool)
  n1 <- sapply(parts, function(p) p$n[1]); n2 <- sapply(parts, function(p) p$n[2])
  w1 <- n1 / sum(n1); w2 <- n2 / sum(n2)
  add <- function(field, w) Reduce(`+`, Map(function(p, x) x * p[[field]], parts, w))
  addsq <- function(field, w) sqrt(Reduce(`+`, Map(function(p, x) (x * p[[field]])^2, parts, w)))
  list(first = add("first", w1), first_se = addsq("first_se", w1),
       second = add("second", w2), second_se = addsq("second_se", w2),
       n = c(sum(n1), sum(n2)),
       total = c(sum(sapply(parts, function(p) p$total[1])),
                 sum(sapply(parts, function(p) p$total[2]))),
       cells = max(sapply(parts, function(p) p$cells)))
}
change_rows <- function(question, first, second, arm, ch, answers, labels, scale, shift) {
  # the results' rows of one arm: each answer shown, in the question's units
  z <- qnorm(0.5 + level / 2)
  diff <- ch$second - ch$first
  se <- sqrt(ch$first_se^2 + ch$second_se^2)
  data.frame(question = question, first_wave = first, second_wave = second, arm = arm,
             answer = labels, n_first = ch$n[1], n_second = ch$n[2],
             first = shift + scale * ch$first[answers],
             first_std_error = scale * ch$first_se[answers],
             second = shift + scale * ch$second[answers],
             second_std_error = scale * ch$second_se[answers],
             difference = scale * diff[answers], std_error = scale * se[answers],
             low = scale * (diff - z * se)[answers], high = scale * (diff + z * se)[answers],
             left_out_first = 1 - ch$n[1] / ch$total[1],
             left_out_second = 1 - ch$n[2] / ch$total[2], cells = ch$cells,
             stringsAsFactors = FALSE)
}"""


def waves_part(versions: Sequence[Survey], level: float = 0.95) -> list[str]:
    """The R lines of the waves: for each pair of consecutive waves, every question the
    results compare (:func:`deniable.collection.store.wave_analysis`'s rules: asked
    unchanged in both, not a key variable, not a group design), per arm and pooled.

    Parameters
    ----------
    versions : sequence of Survey
        The survey id's published versions (waves); fewer than two give no lines.
    level : float in (0, 1), default 0.95
        The intervals' confidence level (the results' default).

    Returns
    -------
    list of str
        R code (base R only) that reads the script's ``d_all`` (the wide CSV, its
        ``arm`` column filled) and its ``moment``, and writes ``ID.change.csv``.
    """
    from ..model import variants_digest

    ordered = sorted(versions, key=lambda s: s.version)
    if len(ordered) < 2:
        return []
    sid = ordered[-1].id
    out = [
        "",
        "# ---- waves: each wave's prevalence and the change to the next (base R) ----",
        "# The change is on like cells: the key cells (the questions asked before treatment)",
        "# with reports in both waves, each wave read at their common mix (direct",
        "# standardization, Kitagawa 1964), per arm and pooled over the arms by their",
        "# respondents; the interval treats the waves as independent (conservative when",
        "# people's answers are not negatively correlated across waves). The same",
        "# computation as the study's results (deniable's wave_analysis).",
        f"level <- {level!r}",
        _FUNCTIONS,
        "waves <- d_all  # the wide CSV the script read, every version",
        "change <- list()",
    ]
    for before, after in itertools.pairwise(ordered):
        keys = [after.questions[i].id for i in after.key_positions]
        out += [
            f"# wave {before.version} to wave {after.version}",
            f"w1 <- waves[waves$version == {before.version}, ]",
            f"w2 <- waves[waves$version == {after.version}, ]",
            f"keys <- c({', '.join(r_str(k) for k in keys)})",
            "w1$cell <- key_cell(w1, keys)",
            "w2$cell <- key_cell(w2, keys)",
        ]
        asked_before = {x.id for x in before.questions}
        for q in after.questions:
            variants = after.variants(q.id)
            if (
                q.id not in asked_before
                or q.id in keys
                or variants_digest(variants) != variants_digest(before.variants(q.id))
                or any(len(v.groups) > 1 for v in variants)
            ):
                continue
            out += _question_lines(after, q.id, before.version, after.version)
    out += [
        "if (length(change) > 0) {",
        "  change <- do.call(rbind, change)",
        f"  write.csv(change, {r_str(sid + '.change.csv')}, row.names = FALSE)",
        "  print(change, digits = 4)",
        '} else cat("waves: no question has released reports in two consecutive waves\\n")',
    ]
    return out


def _question_lines(survey: Survey, qid: str, first: int, second: int) -> list[str]:
    """One question's change per arm and pooled (the results' ``_question_change``)."""
    q = next(x for x in survey.questions if x.id == qid)
    labels = q.choice_labels
    answers = [1] if len(labels) == 2 else list(range(len(labels)))
    scale, shift, shown = 1.0, 0.0, [labels[j] for j in answers]
    if q.numeric is not None and q.range is not None:
        scale, shift, shown = q.range.high - q.range.low, q.range.low, ["mean"]
    arms: list[str | None] = list(survey.arm_names) or [None]
    out = [f"# {qid}: {' '.join(q.text.split())}", "parts <- list()"]
    for arm, variant in zip(arms, survey.variants(qid), strict=True):
        label = "pooled" if arm is None else arm
        where = "" if arm is None else f" & w1$arm == {r_str(arm)}"
        where2 = "" if arm is None else f" & w2$arm == {r_str(arm)}"
        out += [
            f"a <- w1[!is.na(w1${qid}){where}, ]",
            f"b <- w2[!is.na(w2${qid}){where2}, ]",
            f"Q <- {r_matrix(variant.mechanism.inverse)}",
            f"ch <- change_by_cell(a${qid}, b${qid}, a$cell, b$cell, Q)",
            "if (!is.null(ch)) {",
            f"  parts[[{r_str(label)}]] <- ch",
            f"  change[[length(change) + 1]] <- change_rows({r_str(qid)}, {first}, {second}, "
            f"{r_str(label)}, ch, {r_vector([j + 1 for j in answers])}, "
            f"c({', '.join(r_str(s) for s in shown)}), {scale!r}, {shift!r})",
            "}",
        ]
    if len(arms) > 1:
        out += [
            "if (length(parts) > 1) {",
            f"  change[[length(change) + 1]] <- change_rows({r_str(qid)}, {first}, {second}, "
            f'"pooled", pool_arms(parts), {r_vector([j + 1 for j in answers])}, '
            f"c({', '.join(r_str(s) for s in shown)}), {scale!r}, {shift!r})",
            "}",
        ]
    return out
