"""Replicate variances for unequal-probability samples without replacement (RRTCS's
``ResamplingVariance`` options 2 and 3), from the second-order inclusion probabilities.

Both delete each sampled unit in turn from the Hajek mean ``theta = sum(y / pi) /
sum(1 / pi)``, form pseudo-values ``u_k`` from the change, and combine them in the
Sen-Yates-Grundy form ``V = sum_{k < l} (pi_k pi_l / pi_kl - 1) (u_k - u_l)^2``:

- Escobar & Berger (2013, "A new replicate variance estimator for unequal probability
  sampling without replacement", Canadian Journal of Statistics 41(3)): ``theta_(k) =
  (sum(y / pi) - y_k) / (sum(1 / pi) - 1)`` and ``u_k = (theta - theta_(k)) / pi_k``
  (their ``rho_k = 1``);
- Campbell (1980), Berger & Skinner (2005, "A jackknife variance estimator for unequal
  probability sampling", JRSS B 67): ``theta_(k)`` the Hajek mean without unit ``k``
  and ``u_k = (1 - 1 / (N_hat pi_k)) (theta - theta_(k))``, ``N_hat = sum(1 / pi)``.

As López & Barrios's ``samplingVarEst`` (``VE.EB.SYG.Mean.Hajek``,
``VE.Jk.CBS.SYG.Mean.Hajek``), which RRTCS calls; a total's variance is the mean's
times ``N^2``. :func:`hajek_pij` is Hajek's (1964) approximation of the second-order
inclusion probabilities from the first-order ones (``samplingVarEst::Pkl.Hajek.s``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["campbell_berger_skinner", "escobar_berger", "hajek_pij"]

_Array = NDArray[np.float64]


def hajek_pij(pi: NDArray[np.float64]) -> _Array:
    """``pi_kl = pi_k pi_l (1 - (1 - pi_k)(1 - pi_l) / d)`` with ``d = sum(1 - pi_k)``
    over the sample, ``pi_kk = pi_k``; shape (n, n) from ``pi`` of shape (n,), values in
    (0, 1] (Hajek 1964).

    Raises
    ------
    ValueError
        For probabilities outside (0, 1] or all equal to 1.
    """
    p = np.asarray(pi, dtype=np.float64)
    if p.ndim != 1 or np.any(~(p > 0)) or np.any(p > 1):
        raise ValueError("pi must be a 1-D array of inclusion probabilities in (0, 1]")
    q = 1.0 - p
    d = float(q.sum())
    if d <= 0:
        raise ValueError("pi: every unit included with certainty leaves nothing to approximate")
    out = np.outer(p, p) * (1.0 - np.outer(q, q) / d)
    np.fill_diagonal(out, p)
    return out


def _syg(u: _Array, p: _Array, pij: _Array) -> float:
    """``sum_{k < l} (pi_k pi_l / pi_kl - 1) (u_k - u_l)^2`` without a Python loop."""
    d = np.outer(p, p) / pij - 1.0
    np.fill_diagonal(d, 0.0)
    return float(u**2 @ d.sum(axis=1) - u @ d @ u)


def escobar_berger(y: _Array, pi: _Array, pij: _Array, kind: str, N: float) -> float:
    """Escobar-Berger variance of the Hajek mean (``kind="mean"``) or of ``N`` times
    it (``"total"``) of ``y`` (n,) with inclusion probabilities ``pi`` (n,) and
    ``pij`` (n, n)."""
    w = 1.0 / pi
    ty, tx = float(y @ w), float(w.sum())
    theta = ty / tx
    u = (theta - (ty - y) / (tx - 1.0)) / pi
    v = _syg(u, pi, pij)
    return v * N**2 if kind == "total" else v


def campbell_berger_skinner(y: _Array, pi: _Array, pij: _Array, kind: str, N: float) -> float:
    """Campbell-Berger-Skinner jackknife variance of the Hajek mean (``kind="mean"``)
    or of ``N`` times it (``"total"``); arguments as :func:`escobar_berger`."""
    w = 1.0 / pi
    ty, tx = float(y @ w), float(w.sum())
    theta = ty / tx
    u = (1.0 - 1.0 / (tx * pi)) * (theta - (ty - y * w) / (tx - w))
    v = _syg(u, pi, pij)
    return v * N**2 if kind == "total" else v
