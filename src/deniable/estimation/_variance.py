"""Exact variances of the moment estimator and their worst cases (private).

For a design with left inverse ``Q = P^+`` and report shares ``lam = P pi``, the moment
estimator ``pi_hat = Q lam_hat`` of ``n`` independent reports has covariance
``Q (diag(lam) - lam lam^T) Q^T / n`` (multinomial covariance pushed through ``Q``;
Chaudhuri & Mukerjee 1988). For the two-coin design that is ``4 lam (1 - lam) / n``,
between ``3 / (4n)`` and ``1 / n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..mechanisms import FiniteChannel

__all__ = ["AffineMap", "affine_map", "per_respondent_variance", "worst_case_variance"]


@dataclass(frozen=True)
class AffineMap:
    """``pi_hat[j] = intercept[j] + slope[j] * lam_hat[report[j]]`` for every category j."""

    report: NDArray[np.intp]
    slope: NDArray[np.float64]
    intercept: NDArray[np.float64]

    def share_range(self, design: FiniteChannel) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Achievable range of each ``lam[report[j]]`` over the simplex, shapes (k,)."""
        rows = design.matrix[self.report]
        return rows.min(axis=1), rows.max(axis=1)


def affine_map(design: FiniteChannel) -> AffineMap | None:
    """The per-category affine map of the moment estimator, or None when there is none.

    A category's estimate is affine in one report share when its row of ``Q`` is
    constant off one report ``r`` (then ``Q[j] lam = c + (Q[j, r] - c) lam_r`` since
    ``sum(lam) = 1``). This holds for every binary design (with ``r`` = report 1) and
    for k-ary randomized response (with ``r = j``).
    """
    Q = design.inverse
    k, m = Q.shape
    reports = np.empty(k, dtype=np.intp)
    slopes = np.empty(k)
    intercepts = np.empty(k)
    order = [1, 0] if m == 2 else list(range(m))
    for j in range(k):
        row = Q[j]
        scale = float(np.abs(row).max())
        candidates = [j] + [r for r in order if r != j] if m > 2 else order
        for r in candidates:
            others = np.delete(row, r)
            if np.ptp(others) <= 1e-10 * scale:
                reports[j] = r
                intercepts[j] = others[0]
                slopes[j] = row[r] - others[0]
                break
        else:
            return None
    return AffineMap(reports, slopes, intercepts)


def per_respondent_variance(
    design: FiniteChannel, prevalence: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``n * Var(pi_hat[j])`` at the given prevalence (shape (k,)), returns shape (k,)."""
    lam = design.matrix @ prevalence
    Q = design.inverse
    return np.asarray((Q**2) @ lam - (Q @ lam) ** 2)


def worst_case_variance(
    design: FiniteChannel,
    prevalence: float | tuple[float, float] | NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Largest ``n * Var(pi_hat[j])`` for each category j, shape (k,).

    ``prevalence``: None (worst case over every distribution), a number or a
    ``(low, high)`` range for the prevalence of each category (binary designs: of
    "yes"), or a full distribution of shape (k,).
    """
    k = design.n_truths
    if isinstance(prevalence, np.ndarray) and prevalence.shape == (k,):
        return per_respondent_variance(design, prevalence)
    amap = affine_map(design)
    if amap is not None:
        lam_lo, lam_hi = amap.share_range(design)
        if prevalence is not None:
            lo, hi = _prevalence_range(prevalence)
            if design.matrix.shape == (2, 2):  # a binary design
                # the range is given for "yes"; "no" takes the mirrored range
                lo_j = np.array([1.0 - hi, lo])
                hi_j = np.array([1.0 - lo, hi])
            else:
                lo_j, hi_j = np.full(k, lo), np.full(k, hi)
            a = (lo_j - amap.intercept) / amap.slope
            b = (hi_j - amap.intercept) / amap.slope
            lam_lo, lam_hi = np.minimum(a, b), np.maximum(a, b)
        lam = np.clip(0.5, lam_lo, lam_hi)
        return np.asarray(amap.slope**2 * lam * (1.0 - lam))
    if prevalence is not None:
        raise ValueError(
            "for this design give prevalence as None or a full distribution of shape "
            f"({k},); a scalar or range needs a binary or k-ary design"
        )
    return np.array([_max_variance_on_simplex(design, j) for j in range(k)])


def _max_variance_on_simplex(design: FiniteChannel, j: int) -> float:
    """Maximise the concave ``n Var(pi_hat[j])`` over the simplex (SLSQP from the centre)."""
    from scipy import optimize

    k = design.n_truths
    starts = [np.full(k, 1.0 / k), *np.eye(k)]

    def neg(pi: NDArray[np.float64]) -> float:
        return -float(per_respondent_variance(design, np.clip(pi, 0, 1))[j])

    res = optimize.minimize(  # type: ignore[call-overload]
        neg,
        starts[0],
        method="SLSQP",
        bounds=[(0.0, 1.0)] * k,
        constraints=[{"type": "eq", "fun": lambda p: float(p.sum() - 1.0)}],
    )
    # the objective is concave, so SLSQP's optimum is global; the vertices guard the edges
    return max(-float(res.fun), *(-neg(s) for s in starts))


def _prevalence_range(
    prevalence: float | tuple[float, float] | NDArray[np.float64],
) -> tuple[float, float]:
    arr = np.atleast_1d(np.asarray(prevalence, dtype=np.float64))
    if arr.size == 1:
        lo = hi = float(arr[0])
    elif arr.size == 2:
        lo, hi = float(arr.min()), float(arr.max())
    else:
        raise ValueError("prevalence must be a number in [0, 1] or a (low, high) range")
    if not (0.0 <= lo <= hi <= 1.0):
        raise ValueError(f"prevalence must lie in [0, 1], got {prevalence!r}")
    return lo, hi
