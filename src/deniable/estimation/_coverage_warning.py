"""Exact coverage of the prevalence intervals, and the rule by which
:meth:`~deniable.estimation.PrevalenceEstimate.confidence_interval` warns: decided at
the estimate in hand.

For a design whose estimate of a category is affine in one report share (every binary
design and k-ary randomized response: :func:`~deniable.estimation._variance.affine_map`)
that report's count is ``Binomial(n, lam)``, ``lam = (P pi)_r``, and every interval
method depends on that count alone (``bayes`` too: its interval is the highest-density
set of the exact one-dimensional posterior of the category given its report's count,
:func:`~deniable.estimation._intervals.binary_hpd`). Its coverage at a prevalence is the
finite sum ``sum_y Pr(y) [pi in CI(y)]`` (counts in the outer ``1e-12`` of each tail
left out).

The rule (:func:`coverage_warning`), decided at the estimate in hand: for the design,
``n``, the method, the level and each category, the *neighbourhood* of the estimate is
the prevalences within :data:`REACH` (one) of the largest standard errors
(``|slope| / (2 sqrt(n))``) of it, within [0, 1]; the method's exact coverage is
averaged over it (on a grid of a quarter of a count's step, so the saw-tooth of a
discrete count's coverage, whose dips are a count's step wide, is averaged out rather
than taken at its lowest tooth), and below :data:`FLOOR` the warning gives that mean and
the neighbourhood, and recommends ``feldman_cousins``. ``feldman_cousins`` and
``chebyshev`` cover at least the level at every prevalence by construction and are not
checked. :func:`warned_coverage` computes, by the same enumeration, the coverage among
all surveys, among the unwarned and the share warned at given prevalences
(docs/coverage.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..mechanisms import FiniteChannel
from ._bayes import category_prior
from ._intervals import category_hpd, prevalence_intervals
from ._variance import affine_map

__all__ = [
    "FLOOR",
    "GUARANTEED",
    "REACH",
    "TAIL",
    "coverage_warning",
    "goal_attainable",
    "interval_coverage",
    "warned_coverage",
]

#: Coverage every offered interval is held to; below it, the method warns.
FLOOR = 0.94
#: The neighbourhood of an estimate whose coverage is averaged, in the largest standard
#: errors of the category's estimate on either side.
REACH = 1.0
#: Probability left out in each tail of a count's distribution.
TAIL = 1e-12
#: Methods that cover at least the level everywhere by construction.
GUARANTEED = ("feldman_cousins", "chebyshev")


def _require_affine(design: FiniteChannel) -> Any:
    """The design's per-category affine inverse; raises ``ValueError`` without one."""
    amap = affine_map(design)
    if amap is None:
        raise ValueError(
            "exact coverage needs a design whose estimate of each category is affine in one "
            "report share (binary designs, k-ary RR)"
        )
    return amap


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


def _count_intervals(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    j: int,
    y: NDArray[np.int64],
    prior: NDArray[np.float64] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``method``'s interval of category ``j`` at each count ``y`` of its report."""
    amap = affine_map(design)
    assert amap is not None
    r = int(amap.report[j])
    if method == "bayes":
        beta = category_prior(prior, j, design.n_truths)
        return category_hpd(design, amap, j, y, n, confidence_level, beta)
    lo2, hi2 = prevalence_intervals(design, _tallies(design, r, y, n), method, confidence_level)
    return lo2[:, j], hi2[:, j]


def _shares(design: FiniteChannel, j: int, prevalences: NDArray[np.float64]) -> NDArray[np.float64]:
    """The share of category ``j``'s report at each prevalence of ``j`` (the others
    sharing the rest equally)."""
    amap = affine_map(design)
    assert amap is not None
    r, k = int(amap.report[j]), design.n_truths
    at0 = float(design.matrix[r] @ _prevalence_vector(k, j, 0.0))
    at1 = float(design.matrix[r] @ _prevalence_vector(k, j, 1.0))
    return np.clip(at0 + (at1 - at0) * np.asarray(prevalences, dtype=np.float64), 0.0, 1.0)


def interval_coverage(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    category: int,
    prevalences: tuple[float, ...],
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

    _require_affine(design)
    lams = [float(v) for v in _shares(design, category, np.asarray(prevalences))]
    ranges = [_count_range(n, lam) for lam in lams]
    y = np.unique(np.concatenate([np.arange(lo, hi + 1) for lo, hi in ranges]))
    low, high = _count_intervals(design, n, method, confidence_level, category, y, prior)
    coverage = np.empty(len(prevalences))
    width = np.empty(len(prevalences))
    for i, (p, lam) in enumerate(zip(prevalences, lams, strict=True)):
        w = stats.binom.pmf(y, n, lam)
        coverage[i] = w @ ((low <= p + 1e-12) & (p - 1e-12 <= high))
        width[i] = w @ (high - low) / w.sum()
    return coverage, width


def _local_mean(
    design: FiniteChannel,
    n: int,
    j: int,
    y: NDArray[np.int64],
    lo_y: NDArray[np.float64],
    hi_y: NDArray[np.float64],
    centers: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The mean exact coverage over the neighbourhood of each estimate in ``centers``
    (module text): on a grid of a quarter of a count's step (``|slope| / (4 n)``), the
    points within ``REACH`` largest standard errors of the center."""
    amap = affine_map(design)
    assert amap is not None
    slope = abs(float(amap.slope[j]))
    reach = REACH * slope * 0.5 / math.sqrt(n)
    step = slope / (4 * n)
    low = max(float(centers.min()) - reach, 0.0)
    high = min(float(centers.max()) + reach, 1.0)
    grid = np.clip(np.arange(math.floor(low / step), math.ceil(high / step) + 1) * step, 0.0, 1.0)
    coverage = _covered(design, n, j, y, lo_y, hi_y, grid)
    total = np.concatenate([[0.0], np.cumsum(coverage)])
    start = np.searchsorted(grid, centers - reach - 1e-15, side="left")
    stop = np.searchsorted(grid, centers + reach + 1e-15, side="right")
    return np.asarray((total[stop] - total[start]) / np.maximum(stop - start, 1), dtype=np.float64)


def _covered(
    design: FiniteChannel,
    n: int,
    j: int,
    y: NDArray[np.int64],
    lo_y: NDArray[np.float64],
    hi_y: NDArray[np.float64],
    points: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Exact coverage at each prevalence of ``points`` of the intervals ``lo_y, hi_y``
    of the consecutive counts ``y`` (whose range holds all but ``2 TAIL`` of the mass
    at every point)."""
    from scipy import special, stats

    lam = _shares(design, j, points)
    if np.all(np.diff(lo_y) >= 0) and np.all(np.diff(hi_y) >= 0):
        # monotone intervals: the counts covering pi are one run, [first, last]
        last = y[0] + np.searchsorted(lo_y, points + 1e-12, side="right") - 1
        first = y[0] + np.searchsorted(hi_y, points - 1e-12, side="left")
        below = np.where(first >= 1, special.bdtr(np.maximum(first - 1, 0), n, lam), 0.0)
        return np.asarray(
            np.where(last >= first, special.bdtr(last, n, lam) - below, 0.0), dtype=np.float64
        )
    pmf = stats.binom.pmf(y[None, :], n, lam[:, None])
    covers = (lo_y[None, :] <= points[:, None] + 1e-12) & (points[:, None] - 1e-12 <= hi_y[None, :])
    return np.asarray((pmf * covers).sum(axis=1), dtype=np.float64)


def boundary_left_out(
    low: NDArray[np.float64],
    high: NDArray[np.float64],
    fc_low: NDArray[np.float64],
    fc_high: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """Whether ``bayes``'s interval ``low, high`` leaves out 0 or 1 where
    ``feldman_cousins``'s ``fc_low, fc_high`` (at least the level at every prevalence)
    keeps it: the credible interval's warning at a boundary
    (:meth:`~deniable.estimation.PrevalenceEstimate.confidence_interval`); arrays of one
    shape, and the result of it."""
    return np.asarray(((low > 0) & (fc_low == 0)) | ((high < 1) & (fc_high == 1)))


def warned_coverage(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    category: int,
    prevalences: tuple[float, ...],
    prior: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """What the warning does to the surveys at each prevalence, exactly (by enumerating
    the category's report count, the warning decided at the unbiased estimate as
    :func:`coverage_warning` does): ``(coverage among all, coverage among the unwarned
    (NaN where every survey is warned), share warned)``, shapes (len(prevalences),).

    Raises
    ------
    ValueError
        For a design without a per-category affine inverse.
    """
    from scipy import stats

    amap = _require_affine(design)
    j = category
    y = np.arange(n + 1, dtype=np.int64)
    lo_y, hi_y = _count_intervals(design, n, method, confidence_level, j, y, prior)
    if method in GUARANTEED:
        warned = np.zeros(y.size, dtype=bool)
    else:
        center = np.clip(float(amap.intercept[j]) + float(amap.slope[j]) * y / n, 0.0, 1.0)
        warned = _local_mean(design, n, j, y, lo_y, hi_y, center) < FLOOR
    if method == "bayes":  # and the credible interval's warning at a boundary
        fc = _count_intervals(design, n, "feldman_cousins", confidence_level, j, y, None)
        warned |= boundary_left_out(lo_y, hi_y, *fc)
    cover_all = np.empty(len(prevalences))
    cover_unwarned = np.empty(len(prevalences))
    share = np.empty(len(prevalences))
    for i, (p, lam) in enumerate(
        zip(prevalences, _shares(design, j, np.asarray(prevalences)), strict=True)
    ):
        w = stats.binom.pmf(y, n, lam)
        covered = (lo_y <= p + 1e-12) & (p - 1e-12 <= hi_y)
        cover_all[i] = w @ covered
        share[i] = w @ warned
        rest = w @ ~warned
        cover_unwarned[i] = (w @ (covered & ~warned)) / rest if rest > 0 else math.nan
    return cover_all, cover_unwarned, share


#: The largest n whose intervals at every count are kept (a warning is then a lookup).
_TABLE_MAX = 20_000
_tables: dict[tuple[Any, ...], tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]]
_tables = {}


def _representative(design: FiniteChannel, j: int, prior: NDArray[np.float64] | None) -> int:
    """The first category of ``design`` whose interval at every count is category
    ``j``'s: the same affine map ``pi = c + s lam_r``, range ``[a_j, b_j]`` of its
    report's share and Beta prior, to 12 significant digits (one inverse's rows differ
    in their last bits). The categories of k-ary RR share all of it, so they share one
    table of intervals (a table a category took 0.6 s at n = 2,000: 20 categories, 11 s),
    and a table is always computed from its representative, so that what a category
    is told never depends on which tables happen to be kept."""
    amap = affine_map(design)
    assert amap is not None
    a, b = amap.share_range(design)

    def key(i: int) -> tuple[float, ...]:
        exact = (amap.intercept[i], amap.slope[i], a[i], b[i],
                 *category_prior(prior, i, design.n_truths))  # fmt: skip
        return tuple(float(f"{float(v):.12g}") for v in exact)

    mine = key(j)
    return next(i for i in range(j + 1) if key(i) == mine)


def _table(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    j: int,
    prior: NDArray[np.float64] | None,
    low: float,
    high: float,
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """The counts and their intervals that the coverage over ``[low, high]`` needs:
    every count, computed once per design, n, method, level, category and prior, up to
    ``_TABLE_MAX`` (a quarter of it for ``bayes``, whose interval takes a posterior on a
    grid per count); beyond it, the counts the neighbourhood reaches."""
    if n > (_TABLE_MAX // 4 if method == "bayes" else _TABLE_MAX):
        ends = _shares(design, j, np.array([low, high]))
        ranges = [_count_range(n, float(lam)) for lam in ends]
        y = np.arange(min(r[0] for r in ranges), max(r[1] for r in ranges) + 1, dtype=np.int64)
        return (y, *_count_intervals(design, n, method, confidence_level, j, y, prior))
    rep = _representative(design, j, prior)
    key = (
        design.matrix.tobytes(),
        design.matrix.shape,
        n,
        method,
        confidence_level,
        rep,
        None if prior is None else np.asarray(prior, dtype=np.float64).tobytes(),
    )
    if key not in _tables:  # a function of the key alone, whatever was kept before
        if len(_tables) >= 64:
            _tables.clear()
        y = np.arange(n + 1, dtype=np.int64)
        _tables[key] = (y, *_count_intervals(design, n, method, confidence_level, rep, y, prior))
    return _tables[key]


def coverage_warning(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    estimate: NDArray[np.float64],
    prior: NDArray[np.float64] | None = None,
    name: str = "this design",
    labels: tuple[str, ...] | None = None,
) -> str | None:
    """The warning :meth:`PrevalenceEstimate.confidence_interval` gives, or ``None``:
    when, for some category, the method's exact coverage averaged over the prevalences
    within :data:`REACH` of the largest standard errors of ``estimate`` (the unbiased
    moment estimate, shape (k,), whatever the estimator shown: it is the one function of
    the report's count alone) falls below :data:`FLOOR` (module text)."""
    amap = affine_map(design)
    if method in GUARANTEED or amap is None or n < 1:
        return None
    categories = range(design.n_truths)
    if design.n_truths == 2:
        categories = range(1, 2)  # one category says it all
    for j in categories:
        reach = REACH * abs(float(amap.slope[j])) * 0.5 / math.sqrt(n)
        center = float(np.clip(estimate[j], 0.0, 1.0))
        low, high = max(center - reach, 0.0), min(center + reach, 1.0)
        y, lo_y, hi_y = _table(design, n, method, confidence_level, j, prior, low, high)
        mean = float(_local_mean(design, n, j, y, lo_y, hi_y, np.array([center]))[0])
        if mean >= FLOOR:
            continue
        label = f"{labels[j]!r}" if labels is not None else f"category {j}"
        return (
            f"{method} intervals of {label} cover {mean:.3f} on average over the prevalences "
            f"within {REACH:g} standard error of this estimate ({low:.4g} to {high:.4g}) for "
            f"{name} at n = {n:,} (exact coverage, docs/coverage.md), below {FLOOR:.0%}. Use "
            f"feldman_cousins (the default), which covers at least {confidence_level:.0%} at "
            "every prevalence"
        )
    return None


def goal_attainable(
    design: FiniteChannel,
    n: int,
    method: str,
    confidence_level: float,
    category: int,
    prevalences: NDArray[np.float64],
    floor: float = FLOOR,
    most_warned: float = 0.10,
    randomized: bool = False,
) -> bool:
    """Whether *any* warning rule decided from the data meets issue 43's goal for
    ``method`` at every prevalence of ``prevalences`` (shape (m,), in [0, 1]): the
    surveys left unwarned covered at least ``floor`` (or at least 99.9% warned), and at
    most ``most_warned`` warned where the method covers at least the level's 0.95.

    The data a warning can be decided on are the category's report count ``y`` in
    ``0..n`` (every estimate and interval is a function of it), so a rule is a subset of
    the counts. Each prevalence's two conditions are linear in the subset's indicator
    (with one binary per prevalence for "at least 99.9% warned"), and the question is
    whether that integer program is feasible (HiGHS, through
    :func:`scipy.optimize.milp`). ``False`` is a proof that no rule deterministic in the
    count does it. With ``randomized``, a rule may warn each count with a probability
    (the program's relaxation in the counts), which covers every rule that also draws on
    statistics independent of the prevalence given the count (the other categories'
    counts of k-ary RR, where they share the rest equally): ``False`` then proves that
    no rule at all does it.

    Raises
    ------
    ValueError
        For a design without a per-category affine inverse.
    """
    from scipy import optimize, stats

    _require_affine(design)
    y = np.arange(n + 1, dtype=np.int64)
    lo_y, hi_y = _count_intervals(design, n, method, confidence_level, category, y, None)
    points = np.asarray(prevalences, dtype=np.float64)
    weights = np.asarray(
        stats.binom.pmf(y[None, :], n, _shares(design, category, points)[:, None]),
        dtype=np.float64,
    )
    covered = (lo_y[None, :] <= points[:, None] + 1e-12) & (points[:, None] - 1e-12 <= hi_y)
    m = points.size
    margin = weights * (covered - floor)
    # variables: warned[0..n], all_warned[0..m-1]
    honest = np.hstack([-margin, 2.0 * np.eye(m)])  # unwarned cover >= floor, or all warned
    all_warned = np.hstack([weights, -0.999 * np.eye(m)])
    rows = [honest, all_warned]
    lower = [-margin.sum(axis=1), np.zeros(m)]
    upper = [np.full(m, np.inf), np.full(m, np.inf)]
    high = (weights * covered).sum(axis=1) >= 0.95
    if high.any():
        rows.append(np.hstack([weights[high], np.zeros((int(high.sum()), m))]))
        lower.append(np.full(int(high.sum()), -np.inf))
        upper.append(np.full(int(high.sum()), most_warned))
    result = optimize.milp(
        np.zeros(n + 1 + m),
        constraints=optimize.LinearConstraint(np.vstack(rows), np.hstack(lower), np.hstack(upper)),
        integrality=np.r_[np.full(n + 1, 0 if randomized else 1), np.ones(m)].astype(np.int64),
        bounds=optimize.Bounds(0, 1),
    )
    return bool(result.status == 0)
