"""Post-processing that turns frequency estimates into a valid distribution.

The unbiased estimates of a frequency oracle (or of any design's moment estimator)
can be negative and need not sum to one. Post-processing uses no further privacy
budget (it touches only the estimates) and trades a little bias for lower error,
mostly by zeroing the many small values of a large domain (Wang, Lopuhaä-Zwakenberg,
Li, Škorić & Li 2020, "Locally differentially private frequency estimation with
consistency", NDSS):

:func:`project_simplex`
    Euclidean projection onto the probability simplex (Duchi, Shalev-Shwartz, Singer &
    Chandra 2008): ``max(f - theta, 0)`` with ``theta`` chosen so the result sums to 1.
:func:`norm_sub`
    Norm-Sub (Wang et al. 2020; Kairouz et al. 2016): set negative estimates to 0, then
    subtract the same amount from every positive one until they sum to 1, repeating
    while any turns negative. It equals the projection when the projection's
    ``theta >= 0`` and differs otherwise (it never revives a negative estimate).
:func:`oracle_em`
    Maximum likelihood by EM on the exact likelihood of the oracle's reports
    (Dempster, Laird & Rubin 1977): never negative, sums to 1.
:func:`empirical_bayes`
    Nonparametric empirical Bayes (Robbins 1956; Kiefer & Wolfowitz 1956; Jiang &
    Zhang 2009): learns from the k estimates how frequencies are spread, then replaces
    each estimate by its posterior mean, pulling the many values that sit within the
    noise towards each other instead of cutting them to 0. Projected onto the simplex.

``docs/oracles.md`` reports by how much each lowers the mean squared error (measured
by ``bench/oracles.py``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import MEMORY_LIMIT

if TYPE_CHECKING:
    from ..mechanisms import FrequencyOracle

__all__ = ["OracleEMResult", "empirical_bayes", "norm_sub", "oracle_em", "project_simplex"]


class OracleEMResult(NamedTuple):
    """What :func:`oracle_em` found: a point estimate with no standard error (the
    maximum-likelihood frequencies) and the EM steps it took; unpacks as the
    ``(frequencies, iterations)`` pair it was before 0.2.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, oracle_em
    >>> oracle = LocalHashing(k=10, epsilon=2.0)
    >>> result = oracle_em(oracle, oracle.randomize(np.arange(2000) % 2, np.random.default_rng(0)))
    >>> result.frequencies.shape, result.iterations > 0
    ((10,), True)
    """

    frequencies: NDArray[np.float64]
    """Maximum-likelihood frequencies, float64, shape (k,), on the simplex."""
    iterations: int
    """EM steps taken (``max_iterations`` if it stopped there)."""


def _as_vector(estimates: ArrayLike) -> NDArray[np.float64]:
    f = np.asarray(estimates, dtype=np.float64)
    if f.ndim != 1 or f.size == 0 or not np.all(np.isfinite(f)):
        raise ValueError(f"estimates must be a finite 1-D array of shape (k,), got shape {f.shape}")
    return f


def project_simplex(estimates: ArrayLike) -> NDArray[np.float64]:
    """Euclidean projection of ``estimates`` (shape (k,)) onto the probability simplex.

    Duchi et al. (2008), ``O(k log k)``.

    Parameters
    ----------
    estimates : array_like of float, shape (k,)
        Frequency estimates, finite.

    Returns
    -------
    ndarray, shape (k,), float64
        The nearest distribution: non-negative, summing to 1.

    Raises
    ------
    ValueError
        For a non-finite or non-1-D input.

    Examples
    --------
    >>> project_simplex([0.7, 0.5, -0.1]).round(3).tolist()
    [0.6, 0.4, 0.0]
    """
    f = _as_vector(estimates)
    u = np.sort(f)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, f.size + 1)
    rho = int(np.nonzero(u - css / idx > 0)[0][-1])
    theta = css[rho] / (rho + 1)
    return np.asarray(np.maximum(f - theta, 0.0), dtype=np.float64)


def norm_sub(estimates: ArrayLike) -> NDArray[np.float64]:
    """Norm-Sub (Wang et al. 2020): zero negatives, shift positives to sum to 1, repeat.

    Parameters
    ----------
    estimates : array_like of float, shape (k,)
        Unbiased frequency estimates (they may be negative or sum past 1).

    Returns
    -------
    ndarray, shape (k,), float64
        Non-negative, summing to 1 (the uniform distribution if no estimate is
        positive).

    Raises
    ------
    ValueError
        For a non-finite or non-1-D input.

    Examples
    --------
    >>> norm_sub([0.7, 0.5, -0.1]).round(3).tolist()
    [0.6, 0.4, 0.0]
    """
    f = _as_vector(estimates)
    keep = f > 0
    if not keep.any():
        return np.full(f.size, 1.0 / f.size)
    while True:
        delta = (f[keep].sum() - 1.0) / keep.sum()
        shifted = f - delta
        still = keep & (shifted > 0)
        if still.sum() == keep.sum():
            return np.where(keep, shifted, 0.0)
        keep = still


def _em_start(oracle: FrequencyOracle, reports: Any) -> NDArray[np.float64]:
    """Where EM starts: the projected moment estimate, 10% mixed with the uniform.

    Close to the maximum, so EM (which converges linearly, slowly when epsilon is
    small) needs far fewer steps than from the uniform; the uniform share keeps every
    frequency positive (an EM step cannot move a zero).
    """
    tally = oracle.tally(reports)
    p, q = oracle.p_star, oracle.q_star
    moment = project_simplex((tally.shares - q) / (p - q))
    return np.asarray(0.9 * moment + 0.1 / oracle.k, dtype=np.float64)


def oracle_em(
    oracle: FrequencyOracle,
    reports: Any,
    *,
    tol: float = 1e-7,
    max_iterations: int = 3000,
    memory_limit: int = MEMORY_LIMIT,
) -> OracleEMResult:
    """Maximum-likelihood frequencies of an oracle's reports, by EM.

    Every oracle here has a report likelihood of the form
    ``Pr(r | t) = c(r) * (rho if r supports t else 1)`` with ``rho`` the oracle's
    :meth:`~deniable.mechanisms.FrequencyOracle.likelihood_ratio`, so with the sparse
    support matrix ``S`` (distinct reports x k) one EM step is
    ``f <- f * ((rho - 1) S^T w + sum(w)) / n``, ``w_r = m_r / (1 + (rho - 1) (S f)_r)``
    for a report seen ``m_r`` times, accelerated by SQUAREM (Varadhan & Roland 2008)
    with a monotone safeguard. Starts from the simplex projection of the moment
    estimate mixed 9:1 with the uniform; stops when an EM step moves no frequency by
    more than ``tol``. ``iterations`` counts EM steps.

    Parameters
    ----------
    oracle : FrequencyOracle
        The oracle that drew the reports.
    reports : the oracle's reports
        As its ``randomize`` returns them (not a tally: EM needs the reports).
    tol : float > 0, default 1e-7
        Stop when no frequency moves by more than this in an EM step.
    max_iterations : int >= 1, default 3000
    memory_limit : int, default ``MEMORY_LIMIT``
        Bytes the support matrix may take.

    Returns
    -------
    OracleEMResult
        ``frequencies`` (ndarray, float64, shape (k,)) and ``iterations`` (int).

    Raises
    ------
    MemoryLimitError
        (a ValueError) If the support matrix of the distinct reports would take more
        than ``memory_limit`` bytes (default 2 GiB): use the moment estimate with
        :func:`project_simplex` or :func:`norm_sub` instead.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, oracle_em
    >>> oracle = LocalHashing(k=10, epsilon=2.0)
    >>> reports = oracle.randomize(np.arange(2000) % 2, np.random.default_rng(0))
    >>> freq, iterations = oracle_em(oracle, reports)
    >>> round(float(freq.sum()), 6), bool(freq[:2].sum() > 0.9)
    (1.0, True)
    """
    uniq, weights = oracle.unique_reports(reports)
    support = oracle.support_matrix(uniq, memory_limit=memory_limit).astype(np.float64).tocsr()
    support_t = support.T.tocsr()
    n = float(weights.sum())
    rho = oracle.likelihood_ratio()
    m = weights.astype(np.float64)

    def em_step(f: NDArray[np.float64]) -> NDArray[np.float64]:
        w = m / (1.0 + (rho - 1.0) * (support @ f))
        return np.asarray(f * ((rho - 1.0) * (support_t @ w) + w.sum()) / n)

    def loglik(f: NDArray[np.float64]) -> float:
        return float(m @ np.log1p((rho - 1.0) * (support @ f)))

    # SQUAREM (Varadhan & Roland 2008, scheme S3): two EM steps, an extrapolation
    # along them, one EM step from there; kept only if the likelihood is not lower
    # than after the two plain steps, so the iteration stays monotone like EM
    f = _em_start(oracle, reports)
    steps = 0
    while steps < max_iterations:
        f1 = em_step(f)
        steps += 1
        r = f1 - f
        if np.max(np.abs(r)) < tol:
            return OracleEMResult(f1, steps)
        f2 = em_step(f1)
        v = f2 - 2.0 * f1 + f
        norm_v = float(np.sqrt(v @ v))
        if norm_v == 0.0:
            f, steps = f2, steps + 1
            continue
        step = min(-1.0, -float(np.sqrt(r @ r)) / norm_v)
        jump = np.clip(f - 2.0 * step * r + step * step * v, 1e-300, None)
        jump = em_step(jump / jump.sum())
        steps += 2
        f = jump if loglik(jump) >= loglik(f2) else f2
    return OracleEMResult(f, max_iterations)


def _npmle_grid(intercept: float, slope: float, top: float, size: int) -> NDArray[np.float64]:
    """Support points ``0 .. top`` spaced a third of a standard deviation apart.

    With ``Var = intercept + slope * theta`` the map ``u(theta) = integral of
    d theta / sd(theta)`` is ``2 (sd(theta) - sd(0)) / slope``; points equally spaced in
    ``u`` (at most ``size`` of them) are equally far apart in standard deviations.
    """
    sd0 = math.sqrt(intercept)
    flat = abs(slope) * top < 1e-9 * intercept  # constant variance: u = theta / sd0
    span = (
        top / sd0 if flat else 2.0 * (math.sqrt(max(intercept + slope * top, 1e-300)) - sd0) / slope
    )
    u = np.linspace(0.0, span, max(2, min(size, math.ceil(3 * span) + 1)))
    theta = u * sd0 if flat else ((slope * u / 2.0 + sd0) ** 2 - intercept) / slope
    return np.asarray(theta, dtype=np.float64)


def _log_normal_pdf(
    x: NDArray[np.float64],
    intercept: NDArray[np.float64],
    slope: NDArray[np.float64],
    grid: NDArray[np.float64],
) -> NDArray[np.float64]:
    """``log N(x_i; theta_j, intercept_i + slope_i theta_j)`` up to a constant, (len(x), m)."""
    var = np.maximum(intercept[:, None] + slope[:, None] * grid[None, :], 1e-300)
    return np.asarray(-0.5 * ((x[:, None] - grid[None, :]) ** 2 / var + np.log(var)))


def empirical_bayes(
    oracle: FrequencyOracle,
    estimates: ArrayLike,
    n: int,
    *,
    grid_size: int = 400,
    tol: float = 1e-5,
    max_iterations: int = 20_000,
) -> NDArray[np.float64]:
    """Empirical-Bayes posterior means of an oracle's frequencies, on the simplex.

    Each unbiased estimate is, by the central limit theorem (it is affine in a sum of
    ``n`` independent bounded terms), ``x_v ~ N(f_v, intercept_v + slope_v f_v)`` with
    the oracle's exact variance line (:meth:`~deniable.mechanisms.FrequencyOracle.variance_line`,
    other frequencies at the projected estimate). The frequencies are treated as
    draws from an unknown distribution ``G`` on [0, 1], estimated by nonparametric
    maximum likelihood (Kiefer & Wolfowitz 1956) on a grid a third of a standard
    deviation fine, by EM over the grid weights (Laird 1978) until the
    Lindsay (1983) gradient bound puts the mean log-likelihood within ``tol`` of its
    maximum; each ``x_v`` is then replaced by ``E[f | x_v]`` under ``G`` (Robbins 1956;
    the "GMLEB" of Jiang & Zhang 2009) and the result projected onto the simplex.
    Estimates with the same variance line (to 1%) within a tenth of a standard
    deviation of each other share one likelihood term, and ``E[f | x]`` is
    interpolated linearly between them, so the cost grows with the number of
    distinct terms, not with k.

    It lowers the error most where many values lie within the noise of each other
    and of zero (large k, small epsilon or n), and it needs enough values to learn
    ``G``: with k around 10 it is worse than the raw estimate; use :func:`oracle_em`
    there (``docs/oracles.md`` gives the measured regimes). The correlation between
    estimates (local hashing, Hadamard response) is ignored.

    Parameters
    ----------
    oracle : FrequencyOracle
        The oracle that produced the reports.
    estimates : array_like of float, shape (k,)
        Its unbiased (moment) estimates, e.g. ``deniable.estimate(oracle, reports).estimate``.
    n : int
        Number of reports behind them, ``>= 1``.
    grid_size : int, default 400
        Most support points for ``G`` (at least 2).
    tol : float, default 1e-5
        Stop when the mean log-likelihood is provably within ``tol`` of its maximum.
    max_iterations : int, default 20000
        Most EM steps for ``G``.

    Returns
    -------
    ndarray, float64, shape (k,)
        Non-negative, summing to 1.

    Raises
    ------
    ValueError
        For estimates that are not a finite array of shape (k,), ``n < 1``, or a
        ``grid_size`` below 2.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import LocalHashing, empirical_bayes, estimate
    >>> oracle = LocalHashing(k=50, epsilon=1.0)
    >>> reports = oracle.randomize(np.arange(5000) % 5, np.random.default_rng(0))
    >>> smoothed = empirical_bayes(oracle, estimate(oracle, reports).estimate, 5000)
    >>> round(float(smoothed.sum()), 6), bool(smoothed.min() >= 0)
    (1.0, True)
    """
    f = _as_vector(estimates)
    if f.size != oracle.k:
        raise ValueError(f"estimates must have shape ({oracle.k},) for this oracle, got {f.shape}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (the number of reports), got {n!r}")
    if grid_size < 2:
        raise ValueError(f"grid_size must be at least 2, got {grid_size}")
    intercept, slope = oracle.variance_line(project_simplex(f), int(n))
    intercept = np.maximum(intercept, 1e-300)
    a0, b0 = float(intercept.min()), float(np.median(slope))
    top = float(np.clip(f.max(), 0.0, 1.0))
    top = min(1.0, top + 4.0 * math.sqrt(max(a0 + b0 * top, float(np.median(intercept)))))
    grid = _npmle_grid(a0, b0, top, grid_size)

    rows = _binned(f, intercept, slope, a0, b0, top)
    if rows.x.size <= grid_size:
        # few distinct estimates: each is a support point too, so G can sit on them
        # even where the noise is finer than the grid (the NPMLE's atoms lie near data)
        grid = np.union1d(grid, np.clip(rows.x, 0.0, 1.0))
    log_lik = _log_normal_pdf(rows.x, rows.a, rows.b, grid)
    lik = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
    weights = _npmle_weights(lik, rows.size / f.size, tol, max_iterations)
    # E[f | x] at each row's mean estimate, and linear in x between the rows of the
    # same variance line (they are sorted by x within it)
    post = lik * weights
    mean_row = (post @ grid) / post.sum(axis=1)
    posterior_mean = np.empty(f.size)
    for k_id in range(int(rows.kind.max()) + 1):
        mine = rows.kind == k_id
        line = rows.kind_row == k_id
        posterior_mean[mine] = np.interp(f[mine], rows.x[line], mean_row[line])
    return project_simplex(posterior_mean)


class _Rows(NamedTuple):
    """The estimates binned into likelihood rows: each estimate's variance line
    ``kind``, each row's line, mean estimate ``x``, variance line ``a + b f`` and size."""

    kind: NDArray[np.int64]
    kind_row: NDArray[np.int64]
    x: NDArray[np.float64]
    a: NDArray[np.float64]
    b: NDArray[np.float64]
    size: NDArray[np.int64]


def _binned(
    f: NDArray[np.float64],
    intercept: NDArray[np.float64],
    slope: NDArray[np.float64],
    a0: float,
    b0: float,
    top: float,
) -> _Rows:
    """Estimates of equal variance line (to 1%) and within a tenth of a standard
    deviation of each other share one likelihood row, weighted by how many they are:
    the fit costs the number of rows, not k."""
    _, kind = np.unique(np.round(np.log(intercept) / 0.02), return_inverse=True)
    kind = kind.reshape(-1)
    width = math.sqrt(max(min(a0, a0 + b0 * top), 1e-300)) / 10.0
    cell = np.round(f / width).astype(np.int64)
    cell -= cell.min()
    stride = int(cell.max()) + 1
    keys, row, count = np.unique(
        kind.astype(np.int64) * stride + cell, return_inverse=True, return_counts=True
    )
    row = row.reshape(-1)
    return _Rows(
        kind=kind,
        kind_row=keys // stride,
        x=np.bincount(row, weights=f) / count,
        a=np.bincount(row, weights=intercept) / count,
        b=np.bincount(row, weights=slope) / count,
        size=count,
    )


def _npmle_weights(
    lik: NDArray[np.float64], share: NDArray[np.float64], tol: float, max_iterations: int
) -> NDArray[np.float64]:
    """The prior's weights on the grid by EM, from uniform, until the gradient of the
    mean log-likelihood is within ``tol`` of its maximum (``D_j <= 1`` for all ``j``
    at the maximum, and the mean log-likelihood is within ``max_j D_j - 1`` of it;
    Lindsay 1983)."""
    weights = np.full(lik.shape[1], 1.0 / lik.shape[1])
    for _ in range(max_iterations):
        gradient = lik.T @ (share / (lik @ weights))
        if gradient.max() - 1.0 < tol:
            break
        weights = weights * gradient
        weights /= weights.sum()
    return weights
