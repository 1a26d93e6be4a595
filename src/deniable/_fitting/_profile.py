"""Profile-likelihood confidence intervals for the coefficients of a likelihood fit.

The profile log-likelihood of a parameter ``psi`` is ``l_p(psi) = max l(psi, nu)`` over
the others (the nuisance parameters ``nu``); the interval at level ``1 - alpha`` is
``{psi: 2 (l(hat) - l_p(psi)) <= chi2_1(1 - alpha)}`` (Venzon & Moolgavkar 1988;
Pawitan 2001, "In All Likelihood", Sec. 3.4 and 9.4). Unlike the Wald interval it does
not assume the likelihood is quadratic, so it keeps its coverage where the sampling
distribution of the estimate is skewed or bounded (a weak randomized-response design:
the slope of :func:`~deniable.analysis.rr_linear` with Warner(0.65), n = 1,000, where
the Wald interval covers 0.910). It is invariant under a monotone reparametrisation: the
interval of ``sigma = exp(log sigma)`` is the image of that of ``log sigma``.

Each end is a root of ``2 (l(hat) - l_p(psi)) - chi2_1(1 - alpha)``, bracketed by
stepping out from the estimate in steps of the Wald half-width (doubling, at most
:data:`MAX_DOUBLINGS` times; beyond, the end is infinite: the data do not bound it) and
solved by Brent's method to ``1e-6`` standard errors; each evaluation maximises over
the nuisance parameters by L-BFGS-B (SciPy), warm-started from the previous one.

Where the signed root ``r = sign(psi_hat - psi) sqrt(2 (l(hat) - l_p(psi)))`` is itself
far from standard normal (a weak design: at Warner(0.65), n = 1,000 its SD is about
1.04), the *modified* signed root of Barndorff-Nielsen (1986), in the form of Skovgaard
(1996, "An explicit large-deviation approximation to one-parameter tests", Bernoulli
2, 145-165)::

    r* = r + log(u / r) / r,
    u = [S^-1 q]_psi |j(hat)|^(1/2) |S| / (|I| |j_nu nu(tilde)|^(1/2)),

is standard normal to a higher order. ``I``, ``S`` and ``q`` are the covariances of the
score at ``hat``, of the scores at ``hat`` and at the constrained maximum ``tilde``, and
of the score at ``hat`` with ``l(hat) - l(tilde)``; they are estimated by sums over the
rows (Severini 1999, "An empirical adjustment to the likelihood ratio statistic",
Biometrika 86, 235-247): ``I = sum s_i(hat) s_i(hat)'``, ``S = sum s_i(hat)
s_i(tilde)'``, ``q = sum s_i(hat) (l_i(hat) - l_i(tilde))``; ``j`` is the observed
information. The adjusted interval is ``{psi: |r*(psi)| <= z_(1 - alpha/2)}`` (fits
that give each row's log-likelihood and score: ``rows``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_DOUBLINGS", "Profile"]

_Array = NDArray[np.float64]
#: Doublings of the step out from the estimate before an end is declared infinite.
MAX_DOUBLINGS = 8


@dataclass(frozen=True)
class Profile:
    """What profiling needs: the negative log-likelihood and its gradient over the
    optimiser's parameters ``x`` (shape (k,)), the optimum, and the bounds of ``x``.

    Attributes
    ----------
    objective : callable
        ``objective(x) -> (negative log-likelihood, gradient of shape (k,))``, or with
        ``gradient=False`` the negative log-likelihood alone (then differenced).
    x_hat : ndarray, shape (k,), float64
        The maximum-likelihood estimate.
    nll_hat : float
        ``objective(x_hat)[0]``.
    bounds : sequence of (low, high), optional
        Box bounds of each coordinate (``None`` for unbounded), as SciPy's.
    gradient : bool, default True
        Whether ``objective`` returns the gradient too.
    rows : callable, optional
        ``rows(x) -> (log-likelihood of each row, shape (n,); score of each row, shape
        (n, k))``, for the modified signed root ``r*`` (``adjusted=True``).
    """

    objective: Callable[[_Array], Any] = field(repr=False)
    x_hat: _Array
    nll_hat: float
    bounds: Sequence[tuple[float | None, float | None]] | None = None
    gradient: bool = True
    rows: Callable[[_Array], tuple[_Array, _Array]] | None = field(default=None, repr=False)

    def _profile_nll(self, index: int, value: float, start: _Array) -> tuple[float, _Array]:
        """``min objective`` over ``x`` with ``x[index] = value``, from ``start``."""
        from scipy import optimize

        k = self.x_hat.size
        bounds: list[tuple[float | None, float | None]] = (
            list(self.bounds) if self.bounds is not None else [(None, None)] * k
        )
        bounds[index] = (value, value)
        x0 = np.array(start, dtype=np.float64)
        x0[index] = value
        lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
        hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
        x0 = np.clip(x0, lo, hi)
        minimize: Any = optimize.minimize
        res = minimize(
            self.objective,
            x0,
            jac=True if self.gradient else None,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 500, "ftol": 1e-13, "gtol": 1e-9},
        )
        return float(res.fun), np.asarray(res.x, dtype=np.float64)

    def deviance(self, index: int, value: float) -> float:
        """``2 (l(hat) - l_p(value))`` of ``x[index]`` (>= 0 up to the optimiser's
        tolerance): ``value`` lies in the interval at level ``1 - alpha`` exactly when
        it is at most ``chi2_1(1 - alpha)``."""
        nll, _ = self._profile_nll(index, float(value), self.x_hat)
        return 2.0 * (nll - self.nll_hat)

    def signed_roots(self, index: int, value: float) -> tuple[float, float]:
        """``(r, r*)`` at ``x[index] = value``: the signed root of the deviance and its
        modification (Skovgaard 1996 with Severini's 1999 empirical covariances); ``r*``
        is ``r`` where ``u / r`` is not positive or a matrix is singular.

        Raises
        ------
        ValueError
            Without ``rows``.
        """
        if self.rows is None:
            raise ValueError("r* needs each row's log-likelihood and score (rows)")
        nll, x_tilde = self._profile_nll(index, float(value), self.x_hat)
        return self._roots(index, float(value), nll, x_tilde)

    def _hessian(self, x: _Array) -> _Array:
        """Observed information at ``x`` (the Hessian of the objective), (k, k)."""
        from ._results import hessian_from_gradient

        return hessian_from_gradient(lambda z: np.asarray(self.objective(z)[1]), x)

    @functools.cached_property
    def _at_hat(self) -> tuple[_Array, _Array, float, float]:
        """What r* needs at the estimate, the same for every ``value``: each row's
        log-likelihood and score, ``log |I|`` and ``log |j(hat)|``."""
        assert self.rows is not None
        l_hat, s_hat = self.rows(self.x_hat)
        _, log_i = np.linalg.slogdet(s_hat.T @ s_hat)
        _, log_j_hat = np.linalg.slogdet(self._hessian(self.x_hat))
        return l_hat, s_hat, float(log_i), float(log_j_hat)

    def _roots(self, index: int, value: float, nll: float, x_tilde: _Array) -> tuple[float, float]:
        assert self.rows is not None
        r = math.copysign(
            math.sqrt(max(2.0 * (nll - self.nll_hat), 0.0)), self.x_hat[index] - value
        )
        if r == 0.0:
            return r, r
        l_hat, s_hat, log_i, log_j_hat = self._at_hat
        l_tilde, s_tilde = self.rows(x_tilde)
        cross = s_hat.T @ s_tilde
        q = s_hat.T @ (l_hat - l_tilde)
        keep = np.arange(self.x_hat.size) != index
        try:
            _, log_j_nuisance = np.linalg.slogdet(self._hessian(x_tilde)[np.ix_(keep, keep)])
            sign_s, log_s = np.linalg.slogdet(cross)
            first = float(np.linalg.solve(cross, q)[index])
        except np.linalg.LinAlgError:
            return r, r
        u = first * sign_s * math.exp(0.5 * log_j_hat + log_s - log_i - 0.5 * log_j_nuisance)
        if not math.isfinite(u) or u / r <= 0:
            return r, r
        return r, r + math.log(u / r) / r

    def interval(
        self, index: int, scale: float, confidence_level: float, adjusted: bool = False
    ) -> tuple[float, float]:
        """The profile-likelihood interval of ``x[index]`` at ``confidence_level`` in
        (0, 1); ``scale`` (> 0) is its Wald standard error, the first step out. Either
        end is ``-inf`` / ``inf`` where the profile never falls far enough (or the
        coordinate's bound, where it reaches it first). ``adjusted``: the interval of
        the modified signed root, ``|r*| <= z_(1 - alpha/2)`` (needs ``rows``).

        Raises
        ------
        ValueError
            For a level outside (0, 1), an index out of range, or ``adjusted`` without
            ``rows``.
        """
        from scipy import stats

        if not 0 < confidence_level < 1:
            raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
        if not 0 <= index < self.x_hat.size:
            raise ValueError(f"index must be in 0..{self.x_hat.size - 1}, got {index}")
        if adjusted and self.rows is None:
            raise ValueError("r* needs each row's log-likelihood and score (rows)")
        critical = float(stats.chi2.ppf(confidence_level, 1))
        hat = float(self.x_hat[index])
        step0 = scale * math.sqrt(critical) if math.isfinite(scale) and scale > 0 else 0.0
        step0 = step0 or 0.1 * max(abs(hat), 1.0)
        low_bound, high_bound = (None, None) if self.bounds is None else self.bounds[index]
        low = self._end(index, -1.0, low_bound, step0, critical, adjusted)
        high = self._end(index, 1.0, high_bound, step0, critical, adjusted)
        return low, high

    def _end(
        self,
        index: int,
        sign: float,
        bound: float | None,
        step0: float,
        critical: float,
        adjusted: bool = False,
    ) -> float:
        """One end: step out until the profile falls ``critical`` below its top (or
        ``-sign r*`` passes ``sqrt(critical)``), then Brent's root between the last
        step inside and the first outside."""
        from scipy import optimize

        hat = float(self.x_hat[index])
        solved: dict[float, _Array] = {hat: self.x_hat.copy()}

        def excess(value: float) -> float:
            # continuation: start from the solution at the nearest value profiled
            near = min(solved, key=lambda v: abs(v - value))
            nll, x = self._profile_nll(index, value, solved[near])
            solved[value] = x
            if adjusted:
                return -sign * self._roots(index, value, nll, x)[1] - math.sqrt(critical)
            return 2.0 * (nll - self.nll_hat) - critical

        step, inner, outer = step0, hat, math.nan
        for _ in range(MAX_DOUBLINGS + 1):
            value = hat + sign * step
            if bound is not None and sign * (value - bound) >= 0:
                value = float(bound)
            if excess(value) > 0:
                outer = value
                break
            inner = value
            if bound is not None and value == bound:
                return float(bound)  # the parameter's bound comes first
            step *= 2
        if math.isnan(outer):  # not bounded by the data
            return sign * math.inf
        a, b = sorted((inner, outer))
        try:
            return float(optimize.brentq(excess, a, b, xtol=1e-6 * step0, rtol=1e-12))
        except ValueError:  # a multimodal profile changed sign on re-evaluation: bisect
            while abs(outer - inner) > 1e-6 * step0:
                mid = (inner + outer) / 2
                inner, outer = (inner, mid) if excess(mid) > 0 else (mid, outer)
            return (inner + outer) / 2
