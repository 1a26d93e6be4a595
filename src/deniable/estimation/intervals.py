"""Confidence intervals for prevalences, vectorised over many tallies.

Methods (the names of ``statsmodels.stats.proportion.proportion_confint``):

``normal``
    Wald: ``pi_hat +/- z SE`` (SE of the estimate the interval is asked of).
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
    variance).
``bayes``
    Highest-posterior-density (shortest) credible interval of the data-augmentation
    posterior under a Dirichlet (Beta) prior, computed from the draws (Chen & Shao
    1999), and extended to 0 (or 1) when the shortest window starts at the smallest
    (ends at the largest) draw, that is when the posterior density is highest at the
    boundary. The equal-tailed interval it replaces never contains 0, so it covered
    0% of surveys at prevalence 0 (and 23% at 0.001: forced response, n = 300); this
    one covers about 78% at 0 and nominal from 0.005 (docs/coverage.md), and
    :meth:`~deniable.estimation.PrevalenceEstimate.confidence_interval` warns when it
    leaves out a boundary that ``feldman_cousins`` keeps.

Every interval is clipped to [0, 1], the range of a prevalence; estimates are never
clipped.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..mechanisms.channels import FiniteChannel
from .bayes import posterior_draws
from .common import moment_batch, z_quantile
from .variance import AffineMap, affine_map, worst_case_variance

__all__ = [
    "INTERVAL_METHODS",
    "IntervalMethod",
    "hpd_interval",
    "prevalence_intervals",
    "share_interval",
    "share_to_prevalence",
]

IntervalMethod = Literal[
    "feldman_cousins", "normal", "wilson", "agresti_coull", "beta", "jeffreys", "chebyshev", "bayes"
]
INTERVAL_METHODS: tuple[str, ...] = get_args(IntervalMethod)
_SHARE_METHODS = ("wilson", "agresti_coull", "beta", "jeffreys")
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
        half = z_quantile(confidence_level) * np.sqrt(variance)
        low, high = estimate - half, estimate + half
    elif method == "chebyshev":
        center, _ = moment_batch(design, counts)
        half = np.sqrt(worst_case_variance(design)[None, :] / (n * alpha))
        low, high = center - half, center + half
    elif method == "bayes":
        if posterior is None:
            prior = np.ones(design.n_truths) if prior is None else prior
            posterior = posterior_draws(design, counts, prior, rng=rng)
        low, high = hpd_interval(posterior, confidence_level)
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
            lo_s, hi_s = share_interval(method, counts[:, amap.report], n, confidence_level)
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
