"""Exact coverage of a prevalence interval, by enumerating the possible tallies.

For a design whose estimate of a category is affine in one report share (every binary
design and k-ary randomized response: :func:`deniable.estimation._variance.affine_map`),
that report's count is ``Binomial(n, lam)`` with ``lam = (P pi)_r`` exactly, and the
``normal``, binomial (``wilson``, ``agresti_coull``, ``beta``, ``jeffreys``),
``feldman_cousins`` and ``chebyshev`` intervals of the category depend on that count
alone. Their coverage at a prevalence is then a finite sum over the counts,
``sum_y Pr(y) [pi in CI(y)]``: no simulation error. Counts whose probability lies in
the outer ``1e-12`` of each tail are left out (so the result is exact to ``2e-12``).
On a binary design ``bayes`` is enumerated too (its interval comes from the exact
one-dimensional posterior, :func:`deniable.estimation._intervals.binary_hpd`); on k-ary
RR it depends on the whole tally and is not enumerated. The enumeration itself is
:func:`deniable.estimation._coverage_warning.interval_coverage`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_confidence_level, check_integer, check_probability
from ..estimation import INTERVAL_METHODS, affine_map, interval_coverage
from ..mechanisms import Design

__all__ = [
    "ENUMERABLE_METHODS",
    "MAX_N",
    "TAIL",
    "ExactCoverage",
    "exact_coverage",
]

#: Interval methods whose coverage :func:`exact_coverage` enumerates.
ENUMERABLE_METHODS: tuple[str, ...] = tuple(m for m in INTERVAL_METHODS if m != "bayes")
#: Probability left out in each tail of the count's distribution.
TAIL = 1e-12
#: Largest n enumerated (bounds the work: at most about 2 * 7.1 sqrt(n) + 1 counts).
MAX_N = 10**9


@dataclass(frozen=True)
class ExactCoverage:
    """Coverage and expected width of one interval method at one prevalence.

    Attributes
    ----------
    coverage : float in [0, 1]
        ``Pr(low <= pi <= high)`` over the tallies of ``n`` reports.
    mean_width : float
        Expected ``high - low``.
    counts : int
        Number of counts enumerated.
    """

    coverage: float
    mean_width: float
    counts: int


def exact_coverage(
    design: Design,
    prevalence: float,
    n: int,
    method: str,
    confidence_level: float = 0.95,
    category: int | None = None,
) -> ExactCoverage:
    """Exact coverage of ``method``'s interval for one category's prevalence.

    Parameters
    ----------
    design : Design
        A design with a per-category affine inverse (binary designs, k-ary RR).
    prevalence : float in [0, 1]
        True prevalence of ``category``; the other categories share the rest equally.
    n : int, 1 <= n <= 10^9
        Number of reports.
    method : str
        One of :data:`ENUMERABLE_METHODS`, or ``bayes`` on a binary design.
    confidence_level : float in (0, 1), default 0.95
    category : int, optional
        Which truth (default the last: "yes" for binary designs).

    Raises
    ------
    ValueError
        For a design without an affine inverse, ``bayes`` on k-ary RR, or a parameter out
        of range.
    """
    from scipy import stats

    prevalence = check_probability("prevalence", prevalence)
    n = check_integer("n", n, minimum=1)
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N}, got {n}")
    level = check_confidence_level(confidence_level)
    binary_bayes = method == "bayes" and design.n_truths == 2
    if method not in ENUMERABLE_METHODS and not binary_bayes:
        raise ValueError(
            f"method must be one of {', '.join(ENUMERABLE_METHODS)} (or bayes on a binary "
            f"design), got {method!r}"
        )
    amap = affine_map(design)
    if amap is None:
        raise ValueError(
            "exact coverage needs a design whose estimate of each category is affine in one "
            "report share (binary designs, k-ary RR)"
        )
    k = design.n_truths
    j = k - 1 if category is None else check_integer("category", category, minimum=0)
    if j >= k:
        raise ValueError(f"category must be in 0..{k - 1}, got {category}")
    pi = np.full(k, (1.0 - prevalence) / (k - 1))
    pi[j] = prevalence
    lam = float(np.clip(design.matrix[int(amap.report[j])] @ pi, 0.0, 1.0))
    dist = stats.binom(n, lam)
    enumerated = int(min(dist.isf(TAIL) + 1, n)) - int(max(dist.ppf(TAIL), 0)) + 1
    coverage, width = interval_coverage(design, n, method, level, j, (prevalence,))
    return ExactCoverage(float(coverage[0]), float(width[0]), enumerated)
