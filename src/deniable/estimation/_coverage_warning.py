"""Exact coverage of the prevalence intervals on the boundary grid, and the rule by
which :meth:`~deniable.estimation.PrevalenceEstimate.confidence_interval` warns.

For a design whose estimate of a category is affine in one report share (every binary
design and k-ary randomized response: :func:`~deniable.estimation._variance.affine_map`)
that report's count is ``Binomial(n, lam)``, ``lam = (P pi)_r``, and every interval
method but ``bayes`` depends on that count alone: its coverage at a prevalence is the
finite sum ``sum_y Pr(y) [pi in CI(y)]`` (counts in the outer ``1e-12`` of each tail
left out).

``bayes`` on a binary design is enumerated the same way, with its interval taken from
the exact one-dimensional posterior (the density ``Beta(pi; a0, b0) lam(pi)^y (1 -
lam(pi))^(n - y)`` on a grid of 1,601 points spanning 12 of the largest standard
errors either side of the estimate): the highest-density set at the level, which holds
a boundary where the density is highest there, as the draws' interval does. On
k-ary RR the category is collapsed with the others into one binary design (the count
of its report is the same binomial; the other reports' split is left out) under the
prior's Beta marginal: an approximation, checked against simulation in
docs/coverage.md.

The rule (:func:`coverage_warning`): for the design, ``n``, the method and the level,
the exact coverage at each prevalence of :data:`GRID` (the grid of docs/coverage.md
and its mirror image); when it falls below :data:`FLOOR` at some prevalence within
four of the largest standard errors (``|slope| / (2 sqrt(n))``) of the estimate, the
warning names the lowest coverage on the grid and where, and recommends
``feldman_cousins``. ``feldman_cousins`` and ``chebyshev`` cover at least the level at
every prevalence by construction and are not checked.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..mechanisms._channels import FiniteChannel
from ._intervals import binary_hpd, prevalence_intervals
from ._variance import affine_map

__all__ = [
    "FLOOR",
    "GRID",
    "GUARANTEED",
    "TAIL",
    "coverage_warning",
    "grid_coverage",
    "interval_coverage",
]

_NEAR_ZERO = (0.0, 0.001, 0.005, 0.01, 0.05, 0.3, 0.5)
#: The prevalences checked: the boundary grid of docs/coverage.md and its mirror image.
GRID: tuple[float, ...] = tuple(sorted({*_NEAR_ZERO, *(1.0 - p for p in _NEAR_ZERO)}))
#: Coverage every offered interval is held to; below it, the method warns.
FLOOR = 0.94
#: Probability left out in each tail of a count's distribution.
TAIL = 1e-12
#: Methods that cover at least the level everywhere by construction.
GUARANTEED = ("feldman_cousins", "chebyshev")
_cache: dict[tuple[Any, ...], tuple[NDArray[np.float64], NDArray[np.float64]]] = {}


def _count_range(n: int, lam: float) -> tuple[int, int]:
    from scipy import stats

    dist = stats.binom(n, lam)
    return int(max(dist.ppf(TAIL), 0)), int(min(dist.isf(TAIL) + 1, n))


def _prevalence_vector(k: int, j: int, p: float) -> NDArray[np.float64]:
    pi = np.full(k, (1.0 - p) / (k - 1))
    pi[j] = p
    return pi


def _tallies(design: FiniteChannel, r: int, y: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """Tallies with ``y`` reports ``r`` and the rest spread evenly (it does not matter)."""
    counts = np.empty((y.size, design.n_reports), dtype=np.int64)
    others = [s for s in range(design.n_reports) if s != r]
    rest = n - y
    for i, s in enumerate(others):
        counts[:, s] = rest // len(others) + (i < rest % len(others))
    counts[:, r] = y
    return counts


def interval_coverage(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    category: int,
    prevalences: tuple[float, ...] = GRID,
    prior: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact coverage and expected width of ``method``'s interval for ``category`` at
    each prevalence (the other categories share the rest equally); shapes
    (len(prevalences),). ``prior``: the Dirichlet pseudocounts of ``bayes`` (default
    uniform).

    Raises
    ------
    ValueError
        For a design without a per-category affine inverse.
    """
    from scipy import stats

    amap = affine_map(design)
    if amap is None:
        raise ValueError(
            "exact coverage needs a design whose estimate of each category is affine in one "
            "report share (binary designs, k-ary RR)"
        )
    k, j = design.n_truths, category
    r = int(amap.report[j])
    lams = [
        float(np.clip(design.matrix[r] @ _prevalence_vector(k, j, p), 0, 1)) for p in prevalences
    ]
    ranges = [_count_range(n, lam) for lam in lams]
    y = np.unique(np.concatenate([np.arange(lo, hi + 1) for lo, hi in ranges]))
    if method == "bayes":
        pseudo = np.ones(k) if prior is None else np.asarray(prior, dtype=np.float64)
        beta = (float(pseudo[j]), float(pseudo.sum() - pseudo[j]))
        low, high = binary_hpd(amap, j, y, n, confidence_level, beta)
    else:
        lo2, hi2 = prevalence_intervals(design, _tallies(design, r, y, n), method, confidence_level)
        low, high = lo2[:, j], hi2[:, j]
    coverage = np.empty(len(prevalences))
    width = np.empty(len(prevalences))
    for i, (p, lam) in enumerate(zip(prevalences, lams, strict=True)):
        w = stats.binom.pmf(y, n, lam)
        coverage[i] = w @ ((low <= p + 1e-12) & (p - 1e-12 <= high))
        width[i] = w @ (high - low) / w.sum()
    return coverage, width


def grid_coverage(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    category: int,
    prior: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """:func:`interval_coverage` over :data:`GRID` (cached by design matrix, n, method,
    level, category and prior)."""
    key = (
        design.matrix.tobytes(),
        design.matrix.shape,
        int(n),
        method,
        float(confidence_level),
        int(category),
        None if prior is None else np.asarray(prior, dtype=np.float64).tobytes(),
    )
    if key not in _cache:
        if len(_cache) > 512:
            _cache.clear()
        _cache[key] = interval_coverage(design, n, method, confidence_level, category, GRID, prior)
    return _cache[key][0]


def coverage_warning(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    estimate: NDArray[np.float64],
    prior: NDArray[np.float64] | None = None,
    name: str = "this design",
) -> str | None:
    """The warning :meth:`PrevalenceEstimate.confidence_interval` gives, or ``None``:
    when some category's estimate lies within four of the largest standard errors of a
    grid prevalence where the method covers less than :data:`FLOOR`."""
    amap = affine_map(design)
    if method in GUARANTEED or amap is None or n < 1:
        return None
    categories = range(design.n_truths)
    if design.n_truths == 2:
        categories = range(1, 2)  # one category says it all
    grid = np.array(GRID)
    for j in categories:
        coverage = grid_coverage(design, n, method, confidence_level, j, prior)
        bad = coverage < FLOOR
        if not bad.any():
            continue
        reach = 4 * abs(float(amap.slope[j])) * 0.5 / math.sqrt(n)
        if np.min(np.abs(grid[bad] - float(estimate[j]))) > reach:
            continue
        worst = int(np.argmin(coverage))
        approx = " (approximate: k-ary bayes)" if method == "bayes" and design.n_truths > 2 else ""
        return (
            f"{method} intervals cover as little as {coverage[worst]:.3f} (at prevalence "
            f"{grid[worst]:g}) for {name} at n = {n:,}: exact coverage on the boundary grid "
            f"(docs/coverage.md){approx}, and this estimate lies near where it falls below "
            f"{FLOOR:.0%}. Use feldman_cousins (the default), which covers at least "
            f"{confidence_level:.0%} at every prevalence"
        )
    return None
