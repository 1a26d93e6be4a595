"""Instructions for randomizing by hand: cards, coins and dice.

A respondent who does not trust the device randomizes privately and enters only the
outcome. For the classical binary designs the instructions follow the design's own
description (forced response, Warner 1965; unrelated question, Greenberg et al. 1969;
crosswise, Yu, Tian & Tang 2008). For any other design, whose column for a true answer
``t`` gives ``Pr(report r | t)``: when every such chance is a whole number of sixths,
thirty-sixths (two dice) or 2^-m (m coins, m <= 4), the column becomes a table of
outcomes (roll, then look up the report); otherwise no ordinary dice or coins give the
design's chances exactly, and the respondent is told so (:data:`NO_RECIPE`) instead of
being asked for a chance like 71.12% that no die gives. Every sentence comes from the
message catalogs (:mod:`deniable.collection.model`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ._i18n import catalog
from ._survey_designs import SURVEY_DESIGNS

if TYPE_CHECKING:
    from ...mechanisms import Design
    from ._survey import Question

__all__ = ["DEVICES", "NO_RECIPE", "dice_recipe", "physical_instructions"]

#: Equally likely outcomes of the devices tried, in order (one coin, two coins, a die,
#: three coins, four coins, two dice).
DEVICES: tuple[int, ...] = (2, 4, 6, 8, 16, 36)
#: What the respondent is told (in English) when no dice or coins give the chances.
NO_RECIPE = catalog("en")["instructions"]["no_recipe"]


def _pct(p: float) -> str:
    return f"{100 * p:.4g}%"


def dice_recipe(
    columns: NDArray[np.float64],
    truth_labels: list[str],
    report_labels: list[str],
    lang: str = "en",
) -> str | None:
    """A dice or coin recipe for the design, or ``None`` if none gives its chances exactly.

    Parameters
    ----------
    columns : ndarray of float, shape (k, m)
        ``columns[t, r] = Pr(report r | truth t)``; each row sums to 1.
    truth_labels : list of str, length k
    report_labels : list of str, length m
    lang : str, default "en"
        Language of the recipe (a catalog of :mod:`deniable.collection.model`).

    Returns
    -------
    str or None
        "<how to roll> If your true answer is 'a': outcomes 1-4 mean 'x', 5-6 'y'. ..."
    """
    t_ = catalog(lang)["instructions"]
    cols = np.asarray(columns, dtype=np.float64)
    for outcomes in DEVICES:
        counts = cols * outcomes
        if not np.allclose(counts, np.round(counts), atol=1e-9):
            continue
        whole = np.round(counts).astype(int)
        lines = [t_[f"device_{outcomes}"]]
        for t, truth in enumerate(truth_labels):
            start, parts = 1, []
            for r, n in enumerate(whole[t]):
                if n == 0:
                    continue
                end = start + n - 1
                span = f"{start}" if n == 1 else f"{start}-{end}"
                parts.append(t_["recipe_part"].format(span=span, report=report_labels[r]))
                start = end + 1
            lines.append(t_["recipe_truth"].format(truth=truth, parts=", ".join(parts)))
        return " ".join([*lines, t_["recipe_end"]])
    return None


def _forced_response(p_yes: float, p_no: float, labels: list[str], lang: str) -> str:
    """Forced response (Boruch 1971) by the fewest coins or dice whose equally likely
    outcomes give ``p_yes`` and ``p_no`` exactly: outcomes ``1..a`` force the second
    label, the next ``b`` the first, the rest the truth. No such device (20% and 10%
    need tenths): :data:`NO_RECIPE`, and the page offers no own coin."""
    t_ = catalog(lang)["instructions"]
    for outcomes in DEVICES:
        a, b = p_yes * outcomes, p_no * outcomes
        if abs(a - round(a)) > 1e-9 or abs(b - round(b)) > 1e-9 or round(a) + round(b) == 0:
            continue
        n_yes, n_no = round(a), round(b)
        parts = []
        if n_yes:
            span = "1" if n_yes == 1 else f"1-{n_yes}"
            parts.append(t_["forced_response_yes"].format(span=span, yes=labels[1]))
        if n_no:
            first, last = n_yes + 1, n_yes + n_no
            span = f"{first}" if n_no == 1 else f"{first}-{last}"
            parts.append(t_["forced_response_no"].format(span=span, no=labels[0]))
        said = "; ".join(parts)
        return str(t_["forced_response"]).format(
            device=t_[f"device_{outcomes}"],
            parts=said[:1].upper() + said[1:],
            p_yes=_pct(p_yes),
            p_no=_pct(p_no),
            keep=_pct(1 - p_yes - p_no),
            yes=labels[1],
            no=labels[0],
        )
    return str(t_["no_recipe"])


def physical_instructions(
    q: Question,
    lang: str = "en",
    choices: list[str] | None = None,
    reports: list[str] | None = None,
    innocuous: str | None = None,
    design: Design | None = None,
) -> str:
    """Plain-words instructions for randomizing ``q`` with one's own coin, die or cards.

    ``choices``, ``reports`` and ``innocuous`` override the question's labels and its
    innocuous question (a translation's); ``lang`` picks the catalog; ``design`` one
    group's randomizer of a group design (default the question's).
    """
    t_ = catalog(lang)["instructions"]
    if q.panel is not None:  # a hidden permanent draw per answer: the device's to keep
        return str(t_["panel_device"])
    if q.range is not None:  # the report's chance depends on a number: no dice give it
        return str(t_["no_recipe"])
    d = design or q.mechanism
    labels = reports or q.report_labels
    inn = innocuous or q.innocuous_question
    entry = SURVEY_DESIGNS.get(d.spec_name)  # the recipe is the design's registry entry's
    key, p = (entry.recipe if entry else None), d.params
    if key == "forced_response":
        return _forced_response(p["p_yes"], p["p_no"], labels, lang)
    if key == "warner":
        return str(t_["warner"]).format(p=_pct(p["p"]))
    if key == "unrelated":
        inn = inn or t_["unrelated_default"].format(share=_pct(p["innocuous_prevalence"]))
        return str(t_["unrelated"]).format(p=_pct(p["p"]), innocuous=inn)
    if key == "crosswise":
        inn = inn or t_["crosswise_default"].format(share=_pct(p["p"]))
        return str(t_["crosswise"]).format(innocuous=inn, same=labels[1], different=labels[0])
    recipe = dice_recipe(d.matrix.T, choices or q.choice_labels, labels, lang)
    return recipe if recipe is not None else str(t_["no_recipe"])
