"""Small formulas shared by every estimator: normal quantiles, Wald intervals, Bonferroni.

Kept in one place so that each is written once (Wald 1943; Bonferroni's inequality as
used for detection among ``k`` candidates by Erlingsson, Pihur & Korolova 2014).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from .._validation import check_confidence_level, check_probability
from ..mechanisms import FiniteChannel

__all__ = [
    "bonferroni_z",
    "moment_batch",
    "moment_covariance",
    "normal_only_interval",
    "wald_interval",
    "z_quantile",
]


def z_quantile(confidence_level: float) -> float:
    """Two-sided standard normal quantile ``z_{1 - (1 - confidence_level) / 2}``.

    Parameters
    ----------
    confidence_level : float in (0, 1)

    Raises
    ------
    ValueError
        For a confidence level outside (0, 1).

    Examples
    --------
    >>> round(z_quantile(0.95), 4)
    1.96
    """
    level = check_confidence_level(confidence_level)
    return float(special.ndtri(1.0 - (1.0 - level) / 2.0))


def bonferroni_z(alpha: float, k: int) -> float:
    """One-sided detection threshold ``z_{1 - alpha / k}`` for ``k`` simultaneous tests.

    Parameters
    ----------
    alpha : float in (0, 1)
        Family-wise false-detection rate (significance level).
    k : int >= 1
        Number of candidates tested.

    Raises
    ------
    ValueError
        For ``alpha`` outside (0, 1).
    """
    alpha = check_probability("alpha", alpha, low_open=True, high_open=True)
    return float(special.ndtri(1.0 - alpha / max(int(k), 1)))


def wald_interval(
    estimate: ArrayLike, std_error: ArrayLike, confidence_level: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``estimate -/+ z std_error`` (arrays broadcast; not clipped)."""
    est = np.asarray(estimate, dtype=np.float64)
    half = z_quantile(confidence_level) * np.asarray(std_error, dtype=np.float64)
    return est - half, est + half


def normal_only_interval(
    estimate: ArrayLike,
    std_error: ArrayLike,
    confidence_level: float,
    method: str | None,
    clip: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`wald_interval` for results that have only the normal (Wald) interval.

    Raises
    ------
    ValueError
        If ``method`` is not ``None`` or ``"normal"``, or the level is outside (0, 1).
    """
    if method not in (None, "normal"):
        raise ValueError(f"method must be 'normal' (the only interval here), got {method!r}")
    low, high = wald_interval(estimate, std_error, check_confidence_level(confidence_level))
    if clip:
        return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)
    return low, high


def moment_covariance(
    inverse: NDArray[np.float64], shares: NDArray[np.float64], n: int | NDArray[np.float64]
) -> NDArray[np.float64]:
    """Covariance of the moment estimator ``Q lam``: ``Q (diag(lam) - lam lam^T) Q^T / n``.

    ``inverse`` (k, m) is the (pseudo-)inverse ``Q`` of the design's matrix and
    ``shares`` the report shares ``lam``, shape (m,) or (S, m) for S tallies at once
    (then ``n`` has shape (S,)); returns (k, k) or (S, k, k) (Chaudhuri & Mukerjee 1988).
    """
    lam = np.asarray(shares, dtype=np.float64)
    if lam.ndim == 1:
        return np.asarray(inverse @ (np.diag(lam) - np.outer(lam, lam)) @ inverse.T / n)
    n_arr = np.asarray(n, dtype=np.float64).reshape(-1, 1, 1)
    outer = lam[:, :, None] * lam[:, None, :]
    diag = np.einsum("sm,mn->smn", lam, np.eye(lam.shape[1]))
    return np.asarray(inverse @ (diag - outer) @ inverse.T / n_arr)


def moment_batch(
    design: FiniteChannel, counts: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Moment estimates and their plug-in variances for tallies ``counts`` (S, m) -> (S, k)."""
    n = counts.sum(axis=1, keepdims=True).astype(np.float64)
    lam = counts / n
    Q = design.inverse
    est = lam @ Q.T
    var = (lam @ (Q**2).T - est**2) / n
    return est, np.maximum(var, 0.0)
