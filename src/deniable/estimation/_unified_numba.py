"""Feldman & Cousins' (1998) unified interval for a binomial share with a bounded range
(private; compiled with numba).

A count ``y ~ Binomial(n, lam)`` whose share ``lam`` is known to lie in ``[a, b]`` (the
image of prevalences in [0, 1] under the design). For each ``lam`` the acceptance region
holds the counts of largest likelihood ratio ``R(y) = f(y | lam) / f(y | lam_hat(y))``,
``lam_hat(y) = clip(y / n, a, b)`` the best share *inside the range*, added until their
probability reaches the confidence level; the interval for an observed ``y`` is every
``lam`` whose region holds it (a Neyman construction: coverage is at least the level for
every ``lam`` in ``[a, b]``). ``log R`` is unimodal in ``y`` (linear below ``n a`` and
above ``n b``, ``-n KL(y/n || lam)`` between), so each region is a run of counts grown
outward from its mode, and its ends grow with ``lam``: the interval's ends are found by
bisection.

Power constraint (Cowan, Cranmer, Gross & Vitells 2011): a count below ``n a`` (an
unbiased estimate beyond the boundary) gets the upper end that the count ``ceil(n a)``
expected at the boundary would get, and symmetrically above ``n b``. Feldman & Cousins'
upper end keeps shrinking as the count falls further below what any share allows,
claiming a precision the data do not hold; the constrained end does not, and since it
only widens intervals the coverage stays at least the level.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numpy.typing import NDArray

__all__ = ["unified_share_interval"]

#: Bisection steps per end (the bracket shrinks by 2^-48, below 4e-15).
_STEPS = 48


@numba.njit(cache=True, nogil=True)
def _xlogy(x: float, y: float) -> float:
    if x == 0.0:
        return 0.0
    if y <= 0.0:
        return -math.inf
    return x * math.log(y)


@numba.njit(cache=True, nogil=True)
def _loglik(y: float, n: float, lam: float) -> float:
    return _xlogy(y, lam) + _xlogy(n - y, 1.0 - lam)


@numba.njit(cache=True, nogil=True)
def _log_ratio(y: int, n: int, lam: float, a: float, b: float) -> float:
    best = min(max(y / n, a), b)
    return _loglik(y, n, lam) - _loglik(y, n, best)


@numba.njit(cache=True, nogil=True)
def _log_pmf(y: int, n: int, lam: float) -> float:
    return (
        math.lgamma(n + 1.0) - math.lgamma(y + 1.0) - math.lgamma(n - y + 1.0) + _loglik(y, n, lam)
    )


@numba.njit(cache=True, nogil=True)
def _region(n: int, lam: float, a: float, b: float, level: float) -> tuple[int, int]:
    """The acceptance region ``[lo, hi]`` (counts) at share ``lam``."""
    if lam <= 0.0:
        return 0, 0
    if lam >= 1.0:
        return n, n
    y0 = min(math.floor(n * lam), n)
    if y0 < n and _log_ratio(y0 + 1, n, lam, a, b) > _log_ratio(y0, n, lam, a, b):
        y0 += 1
    odds = lam / (1.0 - lam)
    lo = y0
    hi = y0
    p_lo = math.exp(_log_pmf(y0, n, lam))  # probabilities of the region's two ends
    p_hi = p_lo
    mass = p_lo
    while mass < level and (lo > 0 or hi < n):
        left = _log_ratio(lo - 1, n, lam, a, b) if lo > 0 else -math.inf
        right = _log_ratio(hi + 1, n, lam, a, b) if hi < n else -math.inf
        if right > left:
            p_hi *= (n - hi) / (hi + 1.0) * odds
            hi += 1
            mass += p_hi
        else:
            p_lo *= lo / (n - lo + 1.0) / odds
            lo -= 1
            mass += p_lo
    return lo, hi


@numba.njit(cache=True, nogil=True)
def _upper(y: int, n: int, a: float, b: float, level: float) -> float:
    """The largest share whose region starts at or below ``y``."""
    if _region(n, b, a, b, level)[0] <= y:
        return b
    lo_lam, hi_lam = a, b
    for _ in range(_STEPS):
        mid = 0.5 * (lo_lam + hi_lam)
        if _region(n, mid, a, b, level)[0] <= y:
            lo_lam = mid
        else:
            hi_lam = mid
    return lo_lam


@numba.njit(cache=True, nogil=True)
def _lower(y: int, n: int, a: float, b: float, level: float) -> float:
    """The smallest share whose region ends at or above ``y``."""
    if _region(n, a, a, b, level)[1] >= y:
        return a
    lo_lam, hi_lam = a, b
    for _ in range(_STEPS):
        mid = 0.5 * (lo_lam + hi_lam)
        if _region(n, mid, a, b, level)[1] >= y:
            hi_lam = mid
        else:
            lo_lam = mid
    return hi_lam


@numba.njit(parallel=True, cache=True, nogil=True)
def _intervals(
    y: NDArray[np.int64], n: NDArray[np.int64], a: float, b: float, level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    low = np.empty(y.shape[0])
    high = np.empty(y.shape[0])
    for i in numba.prange(y.shape[0]):
        if n[i] == 0:
            low[i], high[i] = a, b
        else:
            # power constraint: an end is never tighter than for the count expected at
            # the boundary beyond which the count lies
            at_a = min(math.ceil(n[i] * a), n[i])
            at_b = max(math.floor(n[i] * b), 0)
            high[i] = _upper(max(y[i], at_a), n[i], a, b, level)
            low[i] = _lower(min(y[i], at_b), n[i], a, b, level)
    return low, high


def unified_share_interval(
    y: NDArray[np.int64], n: NDArray[np.int64], a: float, b: float, confidence_level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Feldman-Cousins interval for binomial shares known to lie in ``[a, b]``.

    Parameters
    ----------
    y, n : ndarray of int, same shape
        Counts and trials (``0 <= y <= n``).
    a, b : float, ``0 <= a < b <= 1``
        The range of the share.
    confidence_level : float in (0, 1)

    Returns
    -------
    low, high : ndarray of float64, the shape of ``y``, inside ``[a, b]``
    """
    yy = np.ascontiguousarray(np.asarray(y, dtype=np.int64).ravel())
    nn = np.ascontiguousarray(np.broadcast_to(np.asarray(n, dtype=np.int64), np.shape(y)).ravel())
    low, high = _intervals(yy, nn, float(a), float(b), float(confidence_level))
    shape = np.shape(y)
    return low.reshape(shape), high.reshape(shape)
