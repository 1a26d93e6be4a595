"""Every binary design side by side: each calibrated to one epsilon, or to one
disclosure promise, with the respondents it needs."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import JSON, check_confidence_level, check_probability
from ..errors import PrivacyWarning
from ..mechanisms import (
    Crosswise,
    Design,
    ForcedResponse,
    Kuk,
    Mangat,
    Triangular,
    UnrelatedQuestion,
    Warner,
)
from ._disclosure import disclosure_risk
from ._sample_size import sample_size

__all__ = ["DesignChoice", "compare_designs"]

#: Each binary family on one free parameter ``t``, from most to least private at its
#: ends (open): ``(name, build, low, high)``. Forced response keeps its two forced
#: answers equal (``p_yes = p_no = t / 2``; asymmetric forced answers are a point on the
#: same curve of information only at equal epsilon); the unrelated question's innocuous
#: prevalence is 1/2; Kuk's two decks are mirror images.
FAMILIES: tuple[tuple[str, Callable[[float], Design], float, float], ...] = (
    ("warner", lambda t: Warner(p=t), 0.5, 1.0),
    ("forced-response", lambda t: ForcedResponse(p_yes=(1 - t) / 2, p_no=(1 - t) / 2), 0.0, 1.0),
    ("crosswise", lambda t: Crosswise(p=1 - t), 0.5, 1.0),
    ("kuk", lambda t: Kuk(p_carrier=t, p_noncarrier=1 - t), 0.5, 1.0),
    ("unrelated-question", lambda t: UnrelatedQuestion(p=t, innocuous_prevalence=0.5), 0.0, 1.0),
    ("mangat", lambda t: Mangat(p=t), 0.0, 1.0),
    ("triangular", lambda t: Triangular(p=1 - t), 0.0, 1.0),
)

#: The calibrated parameter is found to this tolerance (brentq's ``xtol``).
_XTOL = 1e-13


@dataclass(frozen=True)
class DesignChoice:
    """One design family at the asked epsilon or promise.

    Attributes
    ----------
    family : str
        The design's registry name (``warner``, ``forced-response``, ...).
    design : Design or None
        The family's design that meets the target exactly, or ``None`` when none can
        (a one-sided design has no finite epsilon).
    epsilon : float
        Its epsilon in nats (``inf`` for a one-sided design, which a report of "no"
        reveals for certain).
    posterior_yes : float
        The highest belief that the answer is "yes" after any one report, from
        ``prior``.
    n : int or None
        Respondents whose released reports give the margin at the level
        (:func:`~deniable.planning.sample_size`, normal).
    n_to_collect : int or None
        ``n`` plus what the release rule may withhold: up to ``min_release - 1``
        responses in each key cell of direct answers at the close.
    note : str
        Why there is no design, or ``""``.

    Examples
    --------
    >>> from deniable.planning import compare_designs
    >>> best = compare_designs(promise=0.75, prior=0.5, margin=0.05)[0]
    >>> best.family, round(best.design.params["p"], 6), best.n
    ('mangat', 0.666667, 865)
    """

    family: str
    design: Design | None
    epsilon: float
    posterior_yes: float
    n: int | None
    n_to_collect: int | None
    note: str = ""

    def to_dict(self) -> dict[str, JSON]:
        """A JSON row: the family, the design's spec, epsilon (``null`` when infinite),
        the promise met, n and n to collect."""
        return {
            "family": self.family,
            "design": None if self.design is None else self.design.spec,
            "epsilon": self.epsilon if math.isfinite(self.epsilon) else None,
            "posterior_yes": self.posterior_yes,
            "n": self.n,
            "n_to_collect": self.n_to_collect,
            "note": self.note,
        }


def _posterior_yes(design: Design, prior: float) -> float:
    return float(np.nanmax(disclosure_risk(design, prior).posterior_yes))


def compare_designs(
    *,
    epsilon: float | None = None,
    promise: float | None = None,
    prior: float = 0.5,
    margin: float = 0.05,
    confidence_level: float = 0.95,
    min_release: int = 30,
    cells: int = 1,
) -> list[DesignChoice]:
    """Every binary design calibrated to one epsilon or to one disclosure promise, with
    the respondents each needs, best first.

    At one epsilon, Warner's design, symmetric forced response, the crosswise model
    and Kuk's cards are one channel (``Pr(yes | yes) = e^eps / (1 + e^eps)``), so they
    need the same n: choose among them by what respondents find credible. That channel
    is the binary randomized response of least variance at its epsilon (Kairouz, Oh &
    Viswanath 2016), so no design beats it there; the one-sided designs (Mangat 1994,
    the triangular model of Yu, Tian & Tang 2008) protect only "yes" and have no finite
    epsilon. At one *promise* (no report raises the belief in "yes" above ``promise``
    from ``prior``), the one-sided designs join, and often need fewer respondents.

    Parameters
    ----------
    epsilon : float > 0, optional
        Epsilon in nats. Exactly one of ``epsilon`` and ``promise``.
    promise : float in (prior, 1), optional
        The highest belief in "yes" that one report may cause.
    prior : float in (0, 1), default 0.5
        The observer's belief in "yes" before a report (a survey file's
        ``disclosure_prior``).
    margin : float in (0, 1), default 0.05
    confidence_level : float in (0, 1), default 0.95
    min_release : int >= 1, default 30
        The survey's ``min_release`` (the collection server's default is 30).
    cells : int >= 1, default 1
        Key cells of direct answers (1 when nothing is asked directly).

    Returns
    -------
    list of DesignChoice
        One per family, those with a design by ``n`` (ties by name), then the rest.

    Raises
    ------
    ValueError
        For neither or both of ``epsilon`` and ``promise``, an epsilon that is not
        positive and finite, a promise not above the prior, or another value outside
        its range.

    Examples
    --------
    >>> from deniable.planning import compare_designs
    >>> rows = compare_designs(epsilon=1.0, margin=0.05)
    >>> [(r.family, r.n) for r in rows[:2]]
    [('crosswise', 1799), ('forced-response', 1799)]
    >>> rows[-1].note
    'one-sided: a report of "no" is certain, so no finite epsilon'
    """
    if (epsilon is None) == (promise is None):
        raise ValueError("give exactly one of epsilon (nats) and promise (a belief in (prior, 1))")
    p0 = check_probability("prior", prior, low_open=True, high_open=True)
    level = check_confidence_level(confidence_level)
    check_probability("margin", margin, low_open=True, high_open=True)
    if int(min_release) != min_release or min_release < 1:
        raise ValueError(f"min_release must be a whole number >= 1, got {min_release!r}")
    if int(cells) != cells or cells < 1:
        raise ValueError(f"cells must be a whole number >= 1, got {cells!r}")
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive finite number of nats, got {epsilon!r}")
    if promise is not None and not p0 < promise < 1:
        raise ValueError(
            f"promise must be a belief in ({p0:g}, 1), above the prior; got {promise!r}"
        )
    with warnings.catch_warnings():  # the search passes designs of no privacy at all
        warnings.simplefilter("ignore", PrivacyWarning)
        rows = [
            _calibrated(name, build, low, high, epsilon, promise, p0)
            for name, build, low, high in FAMILIES
        ]
    withheld = int(cells) * (int(min_release) - 1)
    sized = []
    for r in rows:
        if r.design is None:
            sized.append(r)
            continue
        n = sample_size(r.design, margin, level)
        sized.append(DesignChoice(r.family, r.design, r.epsilon, r.posterior_yes, n, n + withheld))
    met = sorted((r for r in sized if r.n is not None), key=lambda r: (r.n, r.family))
    return met + [r for r in sized if r.n is None]


def _calibrated(
    name: str,
    build: Callable[[float], Design],
    low: float,
    high: float,
    epsilon: float | None,
    promise: float | None,
    prior: float,
) -> DesignChoice:
    """The family's design at the target (found by Brent's method), unsized."""
    from scipy.optimize import brentq  # SciPy's optimisers load where they are used

    def gap(t: float) -> float:
        d = build(t)
        if epsilon is not None:
            return d.epsilon - epsilon
        return _posterior_yes(d, prior) - float(promise)  # type: ignore[arg-type]

    lo, hi = low + 1e-12, high - 1e-12
    if epsilon is not None and not math.isfinite(build(hi).epsilon):
        note = 'one-sided: a report of "no" is certain, so no finite epsilon'
        return DesignChoice(name, None, math.inf, math.nan, None, None, note)
    if gap(lo) * gap(hi) > 0:
        note = "cannot meet it: outside the family's range"
        return DesignChoice(name, None, math.nan, math.nan, None, None, note)
    d = build(float(brentq(gap, lo, hi, xtol=_XTOL)))
    return DesignChoice(name, d, d.epsilon, _posterior_yes(d, prior), None, None)
