"""Samples in which the design varies by respondent (GLMMRR's per-row designs).

GLMMRR (Fox, Klotzke & Veen 2018) writes every binary design as
``Pr(yes) = c + d pi`` with three per-row columns ``RRmodel``, ``p1``, ``p2``
(the table in ``deniable/data/rr-surveys/README.md``). :func:`glmmrr_design` turns one
such triple into a :class:`~deniable.mechanisms.Design`; :func:`designs_by_row` gives a
column of design keys and the mapping from key to design, which is what
:func:`~deniable.analysis.rr_logit` takes (``design=mapping, group=column``): the
likelihood then uses each respondent's own design, and ``rr_logit("y ~ 1", ...)`` is
the pooled maximum-likelihood prevalence over all of them.
"""

from __future__ import annotations

import math

import pandas as pd

from .._validation import check_probability
from ..mechanisms import (
    Crosswise,
    Design,
    ForcedResponse,
    Kuk,
    MatrixDesign,
    UnrelatedQuestion,
    Warner,
)

__all__ = ["GLMMRR_MODELS", "designs_by_row", "glmmrr_design"]

#: GLMMRR's model names.
GLMMRR_MODELS = ("DQ", "Warner", "Forced", "UQM", "Crosswise", "Triangular", "Kuk")


def glmmrr_design(model: str, p1: float, p2: float = 0.0, *, forced: str = "share") -> Design:
    """The design of one GLMMRR row.

    Parameters
    ----------
    model : str
        One of :data:`GLMMRR_MODELS`.
    p1, p2 : float in [0, 1]
        GLMMRR's parameters: ``DQ`` none; ``Warner`` P(sensitive statement);
        ``Forced`` P(answer truthfully) and the forced "yes" (see ``forced``); ``UQM``
        P(answer the sensitive question) and P(yes) to the unrelated one;
        ``Crosswise``/``Triangular`` P(yes) to the innocuous question; ``Kuk`` P(red)
        for carriers and non-carriers (one draw).
    forced : {"share", "unconditional"}, default "share"
        How ``p2`` of a ``Forced`` row is meant: GLMMRR's share of "yes" among the
        forced answers, or the unconditional chance of a forced "yes" (how the ETHBE
        file stores it; see the data README).

    Returns
    -------
    Design
        The yes/no design GLMMRR's ``RRmodel`` names with these parameters.

    Raises
    ------
    ValueError
        For an unknown model or ``forced``, or parameters outside [0, 1].

    Examples
    --------
    >>> from deniable.analysis import glmmrr_design
    >>> glmmrr_design("Warner", 0.8)
    Warner(p=0.8)
    """
    p1 = check_probability("p1", p1)
    p2 = check_probability("p2", p2)
    if model == "DQ":
        return MatrixDesign([[1.0, 0.0], [0.0, 1.0]], truth_labels=("no", "yes"))
    if model == "Warner":
        return Warner(p=p1)
    if model == "Forced":
        if forced not in ("share", "unconditional"):
            raise ValueError(f"forced must be 'share' or 'unconditional', got {forced!r}")
        p_yes = (1 - p1) * p2 if forced == "share" else p2
        return ForcedResponse(p_yes=p_yes, p_no=1 - p1 - p_yes)
    if model == "UQM":
        return UnrelatedQuestion(p=p1, innocuous_prevalence=p2)
    if model == "Crosswise":
        return Crosswise(p=p1)
    if model == "Triangular":
        # Pr(yes) = p1 + (1 - p1) pi: "yes" unless both answers are "no"
        return MatrixDesign([[1 - p1, 0.0], [p1, 1.0]], truth_labels=("no", "yes"))
    if model == "Kuk":
        return Kuk(p_carrier=p1, p_noncarrier=p2, draws=1)
    raise ValueError(f"model must be one of {', '.join(GLMMRR_MODELS)}, got {model!r}")


def designs_by_row(
    frame: pd.DataFrame,
    model: str = "RRmodel",
    p1: str = "p1",
    p2: str = "p2",
    *,
    forced: str = "share",
) -> tuple[pd.Series, dict[str, Design]]:
    """Each row's design key and the designs, for ``rr_logit(design=..., group=...)``.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per response, with GLMMRR's per-row design columns.
    model, p1, p2 : str
        Column names (``p2`` may be missing for designs without one).
    forced : {"share", "unconditional"}
        As for :func:`glmmrr_design`.

    Returns
    -------
    keys : pandas.Series of str, indexed like ``frame``
        ``"model(p1,p2)"`` per row.
    designs : dict of str to Design

    Raises
    ------
    ValueError
        For a missing column or any row :func:`glmmrr_design` refuses (named by key).

    Examples
    --------
    >>> import pandas as pd
    >>> from deniable.analysis import designs_by_row
    >>> frame = pd.DataFrame({"RRmodel": ["Warner", "Warner"], "p1": [0.8, 0.7], "p2": [0.0, 0.0]})
    >>> keys, designs = designs_by_row(frame)
    >>> len(designs)
    2
    """
    missing = [c for c in (model, p1) if c not in frame.columns]
    if missing:
        raise ValueError(f"columns {missing} are not in the data")
    second = frame[p2] if p2 in frame.columns else pd.Series(0.0, index=frame.index)
    second = second.fillna(0.0).astype(float)
    first = frame[p1].astype(float)
    keys = pd.Series(
        [
            f"{m}({a:.6g},{b:.6g})"
            for m, a, b in zip(frame[model].astype(str), first, second, strict=True)
        ],
        index=frame.index,
        name="design",
    )
    designs: dict[str, Design] = {}
    for key, m, a, b in zip(keys, frame[model].astype(str), first, second, strict=True):
        if key in designs:
            continue
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"design {key}: p1 and p2 must be numbers")
        try:
            designs[key] = glmmrr_design(m, a, b, forced=forced)
        except ValueError as exc:
            raise ValueError(f"design {key}: {exc}") from None
    return keys, designs
