"""Sample size for a margin of error at a confidence level."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from .._validation import check_confidence_level, check_probability
from ..estimation import affine_map, worst_case_variance, z_quantile
from ..mechanisms import Design

__all__ = ["SampleSizeMethod", "sample_size"]

SampleSizeMethod = Literal["normal", "chebyshev", "exact"]


def _ceil(x: float) -> int:
    """Ceiling that forgives floating-point noise (99999.99999999999 -> 100000)."""
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else math.ceil(x)


def sample_size(
    design: Design,
    margin: float,
    confidence_level: float = 0.95,
    method: str = "normal",
    prevalence: float | tuple[float, float] | None = None,
) -> int:
    """Respondents needed so the moment estimate is within ``margin`` of the truth.

    Parameters
    ----------
    design : Design
    margin : float in (0, 1)
        Largest acceptable error ``|pi_hat - pi|`` (absolute, on the prevalence scale).
    confidence_level : float in (0, 1), default 0.95
        Probability that the error stays within the margin.
    method : {"normal", "chebyshev", "exact"}
        ``normal``: ``n = z^2 V / margin^2``. ``chebyshev``: the distribution-free
        ``n = V / ((1 - confidence_level) margin^2)`` (the seed's rule, which with its
        ``V = 3/4`` gives 75,000 at ``margin=0.01``, 90%; with the exact worst case ``V = 1``
        it is 100,000). ``exact``: the smallest n (found by bisection, then a local scan,
        since binomial coverage is not monotone in n) whose exact binomial probability
        of an error within the margin reaches the level at every prevalence considered;
        for designs with a per-category affine inverse (binary designs, k-ary RR).
        ``V`` is the exact per-respondent variance ``n Var(pi_hat)``, at its worst over
        the prevalence.
    prevalence : float or (low, high), optional
        Plausible prevalence (of "yes" for binary designs; of each category for k-ary
        designs). Default: the worst case over [0, 1].

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For a margin or confidence level outside (0, 1), an unknown method, or
        ``exact`` on a design without an affine inverse.

    Examples
    --------
    >>> from deniable.mechanisms import ForcedResponse
    >>> coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    >>> sample_size(coins, margin=0.01, confidence_level=0.90, method="chebyshev")
    100000
    >>> sample_size(coins, margin=0.01, confidence_level=0.90, method="normal")
    27056
    """
    q = check_probability("margin", margin, low_open=True, high_open=True)
    level = check_confidence_level(confidence_level)
    if method not in ("normal", "chebyshev", "exact"):
        raise ValueError(f"method must be one of normal, chebyshev, exact; got {method!r}")
    variance = float(worst_case_variance(design, prevalence).max())
    if method == "chebyshev":
        return max(1, _ceil(variance / ((1.0 - level) * q * q)))
    z = z_quantile(level)
    n_normal = max(1, _ceil(z * z * variance / (q * q)))
    if method == "normal":
        return n_normal
    return _exact_sample_size(design, q, level, prevalence, n_normal)


def _exact_sample_size(
    design: Design,
    margin: float,
    level: float,
    prevalence: float | tuple[float, float] | None,
    n_start: int,
) -> int:
    from scipy import stats

    amap = affine_map(design)
    if amap is None:
        raise ValueError("method 'exact' needs a binary design or k-ary RR (affine inverse)")
    categories = [1] if design.is_binary else range(design.n_truths)
    grids = []
    for j in categories:
        lo, hi = (0.0, 1.0) if prevalence is None else _range(prevalence)
        pis = np.unique(np.concatenate([np.linspace(lo, hi, 201), [lo, hi]]))
        lam = (pis - amap.intercept[j]) / amap.slope[j]
        half = np.clip(0.5, lam.min(), lam.max())
        lam = np.unique(np.append(lam, half))
        grids.append((lam, margin / abs(amap.slope[j])))

    def coverage(n: int) -> float:
        worst = 1.0
        for lam, width in grids:
            lo = np.ceil(n * (lam - width) - 1e-9)
            hi = np.floor(n * (lam + width) + 1e-9)
            cov = stats.binom.cdf(hi, n, lam) - stats.binom.cdf(lo - 1, n, lam)
            worst = min(worst, float(np.min(cov)))
        return worst

    hi_n = max(2, n_start)
    while coverage(hi_n) < level:
        hi_n *= 2
    lo_n = 0  # coverage(0) is taken as failing
    while hi_n - lo_n > 1:
        mid = (lo_n + hi_n) // 2
        if coverage(mid) >= level:
            hi_n = mid
        else:
            lo_n = mid
    best = hi_n
    for n in range(hi_n - 1, max(0, hi_n - max(20, hi_n // 50)), -1):
        if coverage(n) >= level:
            best = n
    return best


def _range(prevalence: float | tuple[float, float]) -> tuple[float, float]:
    arr = np.atleast_1d(np.asarray(prevalence, dtype=np.float64))
    return float(arr.min()), float(arr.max())
