"""Confidence intervals for prevalences, vectorised over many tallies.

Methods (the names of ``statsmodels.stats.proportion.proportion_confint``):

``normal``
    Wald: ``pi_hat +/- z SE`` (SE of the estimate the interval is asked of). Where the
    estimate is affine in one report's count (binary designs, k-ary RR), with a
    continuity correction of half a count's step, ``|slope| / (2 n)``, on each side
    (Newcombe 1998, method 2; :func:`continuity_correction`): plain Wald on KaryRR(7, 2)
    at n = 100 covered as little as 0.926 at prevalences where no warning rule could
    single the surveys out (docs/coverage.md); the corrected one covers at least 0.9377
    on the grid 0, 0.001, ..., 1 there (at 0.134), and docs/coverage.md gives its exact
    minimum per design and n. R's ``rr`` and ``RRreg`` give plain Wald:
    ``estimate +/- z std_error``.
``wilson``, ``agresti_coull``, ``beta``, ``jeffreys``
    A binomial interval for the report share ``lam_r`` (Wilson 1927; Agresti & Coull
    1998; Clopper & Pearson 1934; the Jeffreys interval of Brown, Cai & DasGupta
    2001), mapped through the affine inverse ``pi = c + s lam_r`` of the design.
    Defined for designs whose estimate of each category is affine in one report
    share: every binary design and k-ary randomized response.
``feldman_cousins``
    The unified interval of Feldman & Cousins (1998) for the report share ``lam_r``,
    whose range ``[a, b]`` is the image of prevalences in [0, 1]: a Neyman construction
    ordered by the likelihood ratio against the best share *inside* ``[a, b]``, so its
    coverage is at least the confidence level for every prevalence and every n
    (discreteness makes it conservative). With the power constraint of Cowan,
    Cranmer, Gross & Vitells (2011): where the data fall below what any prevalence would
    give (an unbiased estimate below 0) the interval is that of the count expected at
    prevalence 0, ``[0, u]`` with ``u`` about two standard errors, instead of collapsing
    onto 0 (and symmetrically at 1). Defined where the binomial methods are; the
    default there.
``chebyshev``
    Distribution free: ``pi_hat +/- sqrt(V_max / (n (1 - confidence_level)))`` with
    ``V_max`` the exact worst-case per-respondent variance of the moment estimator over
    all prevalences, so coverage is at least the confidence level for every
    prevalence and every n (Chebyshev's inequality; the seed's rule, with the correct
    variance). An estimate beyond 0 (or 1) gets the interval of an estimate at the
    boundary, ``[0, half-width]``, never ``[0, 0]``.
``bayes``
    Credible interval under a Dirichlet (Beta) prior. Where the design's estimate of a
    category is affine in one report share (binary designs, k-ary RR) it comes from the
    exact one-dimensional posterior of that category given its report's count, under the
    prior's Beta marginal (:func:`binary_hpd`: no sampling error): the union of the
    highest-density set (which holds 0 or 1 where the density is highest there) and the
    equal-tailed interval, so it holds at least the level of the posterior mass, taken
    at the count a quarter below and a quarter above the one observed and
    power-constrained (:func:`category_hpd`). The highest-density set alone holds a
    boundary by pulling its other end in, to the one-sided point, and covered 0.93 over
    stretches 2-4 standard errors from the boundary (docs/coverage.md before issue 43).
    On k-ary RR that leaves out how the other reports split, which says little of this
    category; the interval taken from posterior draws of the whole vector missed 0 in
    19-32% of surveys at prevalence 0 (its shortest window of draws starts a draw's
    width above 0). Otherwise it is computed from the data-augmentation draws (Chen &
    Shao 1999) and extended to 0 (or 1) when the shortest window starts at the smallest
    (ends at the largest) draw. Without a prior given, a category's one-dimensional
    posterior takes the uniform Beta(1, 1) prior on the category
    (:func:`~deniable.estimation._bayes.category_prior`: the uniform Dirichlet over 7
    categories gives a category Beta(1, 6), which pulled it towards 0 and covered
    0.000-0.108 at prevalence 0.99); a prior given keeps its Beta marginal.
    :meth:`~deniable.estimation.PrevalenceEstimate.confidence_interval` warns where it
    under-covers, or leaves out a boundary ``feldman_cousins`` keeps
    (:mod:`deniable.estimation`); docs/coverage.md gives its exact minimum coverage.

The binomial methods, ``normal`` and ``bayes`` are power-constrained like ``feldman_cousins``
(Cowan et al. 2011): never narrower than the interval of the count a boundary predicts,
so where the data fall below what prevalence 0 gives the interval is ``[0, u]`` with
``u`` about two standard errors, not a collapse onto 0.

Every interval is clipped to [0, 1], the range of a prevalence; estimates are never
clipped.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._names import INTERVAL_METHODS as INTERVAL_METHODS
from .._names import IntervalMethod as IntervalMethod
from ..mechanisms import FiniteChannel
from ._bayes import category_prior, posterior_draws
from ._normal_theory import moment_batch, z_quantile
from ._variance import AffineMap, affine_map, worst_case_variance

__all__ = [
    "INTERVAL_METHODS",
    "IntervalMethod",
    "binary_hpd",
    "continuity_correction",
    "hpd_interval",
    "prevalence_intervals",
    "share_interval",
    "share_to_prevalence",
]

_SHARE_METHODS = ("wilson", "agresti_coull", "beta", "jeffreys")
#: How far either side of a count ``bayes``'s interval is taken (:func:`category_hpd`).
_SPREAD = 0.25
#: Points of the exact posterior's grid (``binary_hpd``), and rows handled at once.
_POINTS = 1601
_CHUNK = 2048
#: Rounding of the affine map near 0 and 1 (an end at the share's range is 0 or 1).
_SNAP = 1e-12

_Array = NDArray[np.float64]


def hpd_interval(posterior: NDArray[np.float64], confidence_level: float) -> tuple[_Array, _Array]:
    """Shortest intervals holding ``confidence_level`` of the draws, extended to the
    boundary when they start at the smallest or end at the largest draw.

    Parameters
    ----------
    posterior : ndarray, shape (S, draws, k)
    confidence_level : float in (0, 1)

    Returns
    -------
    low, high : ndarray, shape (S, k)
    """
    ordered = np.sort(posterior, axis=1)
    draws = ordered.shape[1]
    window = min(draws, max(1, int(np.ceil(confidence_level * draws))))
    widths = ordered[:, window - 1 :, :] - ordered[:, : draws - window + 1, :]
    start = np.argmin(widths, axis=1)  # (S, k)
    low = np.take_along_axis(ordered, start[:, None, :], axis=1)[:, 0, :]
    high = np.take_along_axis(ordered, start[:, None, :] + window - 1, axis=1)[:, 0, :]
    low = np.where(start == 0, 0.0, low)
    high = np.where(start == draws - window, 1.0, high)
    return low, high


def share_interval(
    method: str, y: NDArray[np.int64], n: NDArray[np.int64], confidence_level: float
) -> tuple[_Array, _Array]:
    """Binomial confidence interval for a proportion ``y / n`` (arrays broadcast together)."""
    from scipy import stats

    y = np.asarray(y, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    alpha = 1.0 - confidence_level
    z = z_quantile(confidence_level)
    if method == "wilson":
        z2 = z * z
        center = (y + z2 / 2.0) / (n + z2)
        half = z / (n + z2) * np.sqrt(y * (n - y) / n + z2 / 4.0)
        return center - half, center + half
    if method == "agresti_coull":
        n_t = n + z * z
        p_t = (y + z * z / 2.0) / n_t
        half = z * np.sqrt(p_t * (1.0 - p_t) / n_t)
        return p_t - half, p_t + half
    if method == "beta":
        with np.errstate(invalid="ignore"):
            low = np.where(y > 0, stats.beta.ppf(alpha / 2.0, np.maximum(y, 1), n - y + 1), 0.0)
            high = np.where(
                y < n, stats.beta.ppf(1 - alpha / 2.0, y + 1, np.maximum(n - y, 1)), 1.0
            )
        return low, high
    if method == "jeffreys":
        low = np.where(y > 0, stats.beta.ppf(alpha / 2.0, y + 0.5, n - y + 0.5), 0.0)
        high = np.where(y < n, stats.beta.ppf(1 - alpha / 2.0, y + 0.5, n - y + 0.5), 1.0)
        return low, high
    raise ValueError(f"method must be one of {', '.join(_SHARE_METHODS)}, got {method!r}")


def prevalence_intervals(
    design: FiniteChannel,
    counts: NDArray[np.int64],
    method: str,
    confidence_level: float,
    *,
    estimate: _Array | None = None,
    variance: _Array | None = None,
    prior: _Array | None = None,
    posterior: NDArray[np.float64] | None = None,
    rng: np.random.Generator | int = 0,
) -> tuple[_Array, _Array]:
    """Intervals for every category of a batch of tallies.

    Parameters
    ----------
    design : Design
    counts : ndarray of int, shape (S, m)
    method : str
        One of :data:`INTERVAL_METHODS`.
    confidence_level : float in (0, 1)
    estimate, variance : ndarray, shape (S, k), optional
        Point estimate and its variance for ``normal`` (default: moment estimator).
    prior : ndarray, shape (k,), optional
        Dirichlet pseudocounts for ``bayes`` (default uniform).
    posterior : ndarray, shape (S, draws, k), optional
        Posterior draws for ``bayes`` (drawn here when omitted).

    Returns
    -------
    low, high : ndarray, shape (S, k), clipped to [0, 1]

    Raises
    ------
    ValueError
        For an unknown method, or a binomial method on a design without a per-category
        affine inverse.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method must be one of {', '.join(INTERVAL_METHODS)}, got {method!r}")
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.sum(axis=1, keepdims=True)
    alpha = 1.0 - confidence_level
    if method == "normal":
        if estimate is None or variance is None:
            estimate, variance = moment_batch(design, counts)
        z = z_quantile(confidence_level)
        half = z * np.sqrt(variance)
        amap = affine_map(design)
        if amap is not None:  # the continuity correction (see the module's text)
            half = half + continuity_correction(amap, n)
        low, high = estimate - half, estimate + half
        if amap is not None:  # the power constraint (see the module's text)
            reach0, reach1 = _boundary_reach(design, amap, n, z)
            high, low = np.maximum(high, reach0), np.minimum(low, 1.0 - reach1)
    elif method == "chebyshev":
        center, _ = moment_batch(design, counts)
        half = np.sqrt(worst_case_variance(design)[None, :] / (n * alpha))
        # beyond a boundary the interval is the one an estimate at it would get, so it
        # never collapses onto 0 or 1 (respondents who do not follow the design can put
        # the estimate several half-widths below 0); only wider: coverage holds
        low = np.minimum(center - half, 1.0 - half)
        high = np.maximum(center + half, half)
    elif method == "bayes":
        low, high = _bayes_intervals(
            design, counts, n[:, 0], confidence_level, prior, posterior, rng
        )
    else:
        amap = affine_map(design)
        if amap is None:
            raise ValueError(
                f"interval method {method!r} needs a design whose estimate of each category is "
                "affine in one report share (binary designs, k-ary RR); use 'normal', "
                "'chebyshev' or 'bayes' for this design"
            )
        if method == "feldman_cousins":
            lo_s, hi_s = _unified(design, amap, counts, n[:, 0], confidence_level)
        else:
            y = counts[:, amap.report]
            lo_s, hi_s = share_interval(method, y, n, confidence_level)
            # the power constraint: never narrower than at the count a boundary predicts
            a, b = amap.share_range(design)
            lo_c, hi_c = share_interval(method, np.clip(y, n * a, n * b), n, confidence_level)
            lo_s, hi_s = np.minimum(lo_s, lo_c), np.maximum(hi_s, hi_c)
        return share_to_prevalence(
            lo_s, hi_s, amap.intercept, amap.slope, snap=method == "feldman_cousins"
        )
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def share_to_prevalence(
    low_share: ArrayLike,
    high_share: ArrayLike,
    intercept: ArrayLike,
    slope: ArrayLike,
    *,
    snap: bool = False,
) -> tuple[_Array, _Array]:
    """An interval of a report share mapped to prevalence ``intercept + slope * share``,
    ordered and clipped to [0, 1]; with ``snap`` (a Feldman-Cousins interval, whose ends
    at the share's range are exactly 0 and 1) ends within 1e-12 of 0 or 1 become them.
    Arrays broadcast; returns ``low, high`` of their shape."""
    a = np.asarray(intercept) + np.asarray(slope) * np.asarray(low_share)
    b = np.asarray(intercept) + np.asarray(slope) * np.asarray(high_share)
    low, high = np.minimum(a, b), np.maximum(a, b)
    if snap:
        low = np.where(low < _SNAP, 0.0, low)
        high = np.where(high > 1.0 - _SNAP, 1.0, high)
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def _bayes_intervals(
    design: FiniteChannel,
    counts: NDArray[np.int64],
    n: NDArray[np.int64],
    confidence_level: float,
    prior: ArrayLike | None,
    posterior: NDArray[np.float64] | None,
    rng: np.random.Generator | int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``bayes`` (the module's text): each category's highest-density interval of its
    exact one-dimensional posterior where the design allows, else from draws."""
    pseudo = np.ones(design.n_truths) if prior is None else np.asarray(prior, dtype=float)
    amap = affine_map(design)
    if amap is None:
        if posterior is None:
            posterior = posterior_draws(design, counts, pseudo, rng=rng)
        return hpd_interval(posterior, confidence_level)
    if design.n_truths == 2:  # one category says it all
        shape = (float(pseudo[1]), float(pseudo[0]))
        low1, high1 = category_hpd(design, amap, 1, counts[:, int(amap.report[1])], n,
                                   confidence_level, shape)  # fmt: skip
        return np.stack([1.0 - high1, low1], axis=1), np.stack([1.0 - low1, high1], axis=1)
    low = np.empty(counts.shape, dtype=np.float64)
    high = np.empty(counts.shape, dtype=np.float64)
    for j in range(design.n_truths):  # k-ary RR: each category given its report's count
        shape = category_prior(prior, j, design.n_truths)
        r = int(amap.report[j])
        low[:, j], high[:, j] = category_hpd(
            design, amap, j, counts[:, r], n, confidence_level, shape
        )
    return low, high


def category_hpd(
    design: FiniteChannel,
    amap: AffineMap,
    j: int,
    y: ArrayLike,
    n: ArrayLike,
    level: float,
    prior: tuple[float, float],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``bayes``'s interval of category ``j`` at each count ``y`` (shape (S,)) of its
    report among ``n``: the union of :func:`binary_hpd` at ``y - 1/4`` and ``y + 1/4``
    (:data:`_SPREAD`), each clipped into the range the design's report shares can reach
    (``n a_j`` to ``n b_j``).

    Power-constrained (Cowan et al. 2011), as ``normal`` is: a count beyond what any
    prevalence predicts gives the interval of the boundary's count, not a narrower one,
    since the posterior sharpens against the boundary as the count runs past it while
    the data are no stronger evidence (an estimate of -0.3 is not more certain of 0 than
    one of 0). Spread over the middle half of the count's cell, since a count is a
    lattice point: at the count alone the exact minimum coverage over a 0.001 grid fell
    to 0.939 (KaryRR(4, 1.5), n 100; Brown, Cai & DasGupta 2001 show the same dips for
    the Jeffreys interval); spread, it is at least 0.946 on Warner(0.8), forced response
    (0.1, 0.2), KaryRR(4, 1.5) and KaryRR(7, 2) at n 100, 300 and 1,000, for widths 1-3%
    larger (``tests/test_coverage_exact.py``)."""
    a, b = amap.share_range(design)
    yy = np.asarray(y, dtype=np.float64).reshape(-1)
    nn = np.broadcast_to(np.asarray(n, dtype=np.float64).reshape(-1), yy.shape)
    lo1, hi1 = binary_hpd(amap, j, np.clip(yy - _SPREAD, nn * a[j], nn * b[j]), nn, level, prior)
    lo2, hi2 = binary_hpd(amap, j, np.clip(yy + _SPREAD, nn * a[j], nn * b[j]), nn, level, prior)
    return np.minimum(lo1, lo2), np.maximum(hi1, hi2)


def binary_posterior_moments(
    amap: AffineMap,
    j: int,
    y: ArrayLike,
    n: ArrayLike,
    prior: tuple[float, float],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The mean and variance of category ``j``'s exact one-dimensional posterior (the
    density of :func:`binary_hpd`, on its grid) at each count ``y`` (shape (S,)) of its
    report among ``n``, under ``Beta(prior[0], prior[1])``. Returns two arrays of shape
    (S,)."""
    size = np.asarray(y).size
    mean = np.empty(size)
    var = np.empty(size)
    for part, grid, dens in _posterior_chunks(amap, j, y, n, prior):
        dens[:, [0, -1]] *= 0.5  # the trapezoidal rule on the evenly spaced grid
        total = dens.sum(axis=1)
        mean[part] = (dens * grid).sum(axis=1) / total
        var[part] = np.maximum((dens * grid**2).sum(axis=1) / total - mean[part] ** 2, 0.0)
    return mean, var


def _posterior_chunks(
    amap: AffineMap, j: int, y: ArrayLike, n: ArrayLike, prior: tuple[float, float]
) -> Iterator[tuple[slice, NDArray[np.float64], NDArray[np.float64]]]:
    """:func:`_posterior_grid` over the counts ``y`` (shape (S,)) among ``n``, ``_CHUNK``
    rows at a time: each chunk's rows, grid and density."""
    yy = np.asarray(y, dtype=np.float64).reshape(-1)
    nn = np.broadcast_to(np.asarray(n, dtype=np.float64), yy.shape)
    for start in range(0, yy.size, _CHUNK):
        part = slice(start, start + _CHUNK)
        yield (part, *_posterior_grid(amap, j, yy[part], nn[part], prior))


def _posterior_grid(
    amap: AffineMap,
    j: int,
    y: NDArray[np.float64],
    nn: NDArray[np.float64],
    prior: tuple[float, float],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Category ``j``'s posterior density (unnormalised, peak 1) at each count of ``y``
    on 1,601 points spanning 12 of the largest standard errors either side of its
    estimate; shapes (S, 1601)."""
    from scipy import special

    c, s = float(amap.intercept[j]), float(amap.slope[j])
    est = np.clip(c + s * y / nn, 0.0, 1.0)
    half = 12 * abs(s) * 0.5 / np.sqrt(nn)
    lo = np.maximum(est - half, 0.0)
    hi = np.minimum(est + half, 1.0)
    grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, _POINTS)[None, :]
    lam = np.clip((grid - c) / s, 1e-300, 1 - 1e-16)  # the report's share at pi
    yy, rest = y[:, None], (nn - y)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        logf = special.xlogy(yy, lam) + special.xlog1py(rest, -lam)
        logf += special.xlogy(prior[0] - 1, grid) + special.xlog1py(prior[1] - 1, -grid)
    logf = np.where(np.isnan(logf), -np.inf, logf)
    return grid, np.exp(logf - logf.max(axis=1, keepdims=True))


def binary_hpd(
    amap: AffineMap,
    j: int,
    y: ArrayLike,
    n: ArrayLike,
    level: float,
    prior: tuple[float, float],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The credible interval of category ``j`` for each count ``y`` (int, shape (S,))
    of its report among ``n``, from the exact one-dimensional posterior under the prior
    ``Beta(prior[0], prior[1])`` on the category: the density ``Beta(pi) lam(pi)^y (1 -
    lam(pi))^(n - y)`` (``lam`` the report's share at ``pi``) on 1,601 points spanning
    12 of the largest standard errors either side of the estimate. The interval is the
    union of the highest-density set (the densest points holding ``level`` of the mass:
    a log-concave density, so one interval, holding 0 or 1 where the density is highest
    there) and the equal-tailed interval; both hold ``level`` of the mass, so their
    union holds at least that. Returns ``low, high``, shapes (S,)."""
    size = np.asarray(y).size
    low = np.empty(size)
    high = np.empty(size)
    for part, grid, dens in _posterior_chunks(amap, j, y, n, prior):
        order = np.argsort(-dens, axis=1)
        ranked = np.take_along_axis(dens, order, axis=1)
        mass = np.cumsum(ranked, axis=1)
        inside = mass - ranked < level * mass[:, -1:]  # the densest points up to the level
        chosen = np.zeros_like(inside)
        np.put_along_axis(chosen, order, inside, axis=1)
        low[part] = np.where(chosen, grid, np.inf).min(axis=1)
        high[part] = np.where(chosen, grid, -np.inf).max(axis=1)
        # joined with the equal-tailed interval: the highest-density set holds a
        # boundary by moving its other end in (the one-sided 95% point instead of the
        # 97.5%), which under-covers just off the boundary (0.93 at 2-4 SEs from it)
        cum = np.cumsum(dens, axis=1)
        cum /= cum[:, -1:]
        rows = np.arange(grid.shape[0])
        tail = (1 - level) / 2
        low[part] = np.minimum(low[part], grid[rows, np.argmax(cum >= tail, axis=1)])
        high[part] = np.maximum(high[part], grid[rows, np.argmax(cum >= 1 - tail, axis=1)])
        # a grid point's ends lie up to one step inside the exact ones: step out
        step = grid[:, 1] - grid[:, 0]
        low[part] = np.maximum(low[part] - step, 0.0)
        high[part] = np.minimum(high[part] + step, 1.0)
    return low, high


def continuity_correction(amap: AffineMap, n: ArrayLike) -> _Array:
    """Half of one report's step in prevalence, ``|slope| / (2 n)``, added to each end of
    ``normal`` on a count design (the Wald interval with continuity correction; Newcombe
    1998, method 2). ``n`` of shape (S, 1) gives shape (S, k)."""
    return np.abs(amap.slope) / (2.0 * np.asarray(n, dtype=np.float64))


def _boundary_reach(
    design: FiniteChannel, amap: AffineMap, n: NDArray[np.int64], z: float
) -> tuple[_Array, _Array]:
    """``z`` standard errors of each category's estimate at prevalence 0 and at 1 (the
    report share each boundary predicts), shapes (S, k)."""
    a, b = amap.share_range(design)
    at_zero = np.where(amap.slope > 0, a, b)  # the share that maps to prevalence 0
    at_one = np.where(amap.slope > 0, b, a)
    scale = np.abs(amap.slope) / np.sqrt(np.asarray(n, dtype=np.float64))
    correction = continuity_correction(amap, n)
    reach0 = z * scale * np.sqrt(at_zero * (1.0 - at_zero)) + correction
    reach1 = z * scale * np.sqrt(at_one * (1.0 - at_one)) + correction
    return reach0, reach1


def _unified(
    design: FiniteChannel,
    amap: AffineMap,
    counts: NDArray[np.int64],
    n: NDArray[np.int64],
    confidence_level: float,
) -> tuple[_Array, _Array]:
    """Feldman-Cousins intervals of each category's report share, shape (S, k)."""
    from ._unified import unified_share_interval

    a, b = amap.share_range(design)
    low = np.empty(counts.shape[:1] + amap.report.shape)
    high = np.empty_like(low)
    for j, r in enumerate(amap.report):
        low[:, j], high[:, j] = unified_share_interval(
            counts[:, r], n, a[j], b[j], confidence_level
        )
    return low, high
