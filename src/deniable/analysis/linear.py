"""Linear regression with a randomized binary predictor (as RRreg's ``RRlin``).

The outcome ``y`` is observed directly; one predictor ``X`` (yes/no) is known only
through its randomized report ``R``. The model (Heck & Moshagen 2018, Sec. 3.3, a
finite mixture over the unobserved ``X``)::

    y = b0 + b_x X + z' g + e,   e ~ N(0, sigma^2),   Pr(X = 1) = pi,
    Pr(R = r | X = x) = P[r, x]  (the design),

so each row's likelihood is ``sum_x pi_x P[r, x] phi(y; b0 + b_x x + z' g, sigma)``.
It is maximised over ``(b, log sigma, logit pi)`` by L-BFGS with the exact gradient (the
complete-data score weighted by each row's posterior over ``x``), started from ordinary
least squares on the reports; standard errors come from the observed information (the
Jacobian of the exact gradient by central differences). The prevalence ``pi`` is
common to all rows, as in ``RRlin``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize
from scipy.special import expit

from ..mechanisms.designs import Design
from ._formula import model_frame
from ._results import LikelihoodFit, normal_only, observed_covariance

__all__ = ["RRLinearResult", "rr_linear"]

Array = NDArray[np.float64]
_LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class RRLinearResult(LikelihoodFit):
    """A fitted linear regression with a randomized binary predictor.

    Attributes
    ----------
    params : pandas.Series
        Coefficients by term (the randomized predictor's term is the effect of a true
        "yes"), then ``sigma`` (residual standard deviation) and ``pi`` (prevalence of
        the randomized predictor).
    covariance : ndarray, shape (p + 2, p + 2)
        Inverse observed information (delta method for ``sigma`` and ``pi``).
    llf : float
    nobs : int
    converged : bool
    formula : str
    design : Design
    """

    design: Design = field(repr=False)

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> str:
        """Model, fit statistics and the coefficient table (Wald intervals)."""
        normal_only(method)
        return self._summary(
            "Linear regression with a randomized predictor (finite-mixture maximum likelihood)",
            confidence_level,
            f"Design: {self.design!r}",
        )


def _unpack(x: Array, p: int) -> tuple[Array, float, float]:
    return x[:p], math.exp(x[p]), float(expit(x[p + 1]))


def _objective(x: Array, X: Array, col: int, y: Array, log_lik_r: Array) -> tuple[float, Array]:
    """Negative log-likelihood and gradient in (b, log sigma, logit pi)."""
    p = X.shape[1]
    b, sigma, pi = _unpack(x, p)
    base = X @ b - X[:, col] * b[col]  # the mean without the randomized term
    means = np.stack([base, base + b[col]], axis=1)  # (n, 2): x = 0, 1
    resid = y[:, None] - means
    log_phi = -0.5 * (resid / sigma) ** 2 - math.log(sigma) - 0.5 * _LOG_2PI
    with np.errstate(divide="ignore"):  # pi at 0 or 1
        log_prior = np.log(np.array([1 - pi, pi]))
    joint = log_prior[None, :] + log_lik_r + log_phi  # (n, 2)
    # log(exp(a) + exp(b)) for the two components, and the posterior of x = 1
    a, c = joint[:, 0], joint[:, 1]
    top = np.maximum(a, c)
    row = top + np.log1p(np.exp(-np.abs(a - c)))
    w1 = np.exp(c - row)
    w = np.stack([1.0 - w1, w1], axis=1)
    grad = np.empty(p + 2)
    # d/db: sum_x w_ix resid_ix / sigma^2 * d mean_ix / db; the randomized term's
    # column holds reports, not x, so its entry is replaced below
    weighted = (w * resid).sum(axis=1) / sigma**2
    grad[:p] = X.T @ weighted
    grad[col] = float(w1 @ resid[:, 1]) / sigma**2
    # d/dlog sigma: sum_x w (resid^2 / sigma^2 - 1)
    grad[p] = float(np.sum(w * ((resid / sigma) ** 2 - 1)))
    # d/dlogit pi: sum (w_i1 - pi)
    grad[p + 1] = float(np.sum(w[:, 1]) - y.size * pi)
    return -float(row.sum()), -grad


def rr_linear(
    formula: str,
    data: pd.DataFrame,
    design: Design,
    rr_predictor: str,
    *,
    max_iter: int = 1000,
) -> RRLinearResult:
    """Linear regression of a clear outcome on a randomized yes/no predictor and
    clear covariates (RRreg's ``RRlin`` with one randomized predictor).

    Parameters
    ----------
    formula : str
        ``"y ~ r + z1 + z2"``: outcome on the left; ``rr_predictor`` must appear as a
        plain term on the right (no transformation or interaction of it).
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    design : Design
        The yes/no design of ``rr_predictor`` (2 truths, 2 reports).
    rr_predictor : str
        Column holding the report codes 0/1 of the randomized predictor.
    max_iter : int, default 1000
        Optimiser iterations at most.

    Returns
    -------
    RRLinearResult

    Raises
    ------
    ValueError
        For a design that is not yes/no, a predictor missing from the formula,
        reports other than 0/1, or fewer rows than parameters.
    """
    if design.n_truths != 2 or design.n_reports != 2:
        raise ValueError("design must be a yes/no design (2 truths, 2 reports)")
    if rr_predictor not in data.columns:
        raise ValueError(f"rr_predictor {rr_predictor!r} is not in data")
    frame = model_frame(formula, data)
    if rr_predictor not in frame.terms:
        raise ValueError(
            f"rr_predictor {rr_predictor!r} must be a term of the formula; terms: {frame.terms}"
        )
    col = frame.terms.index(rr_predictor)
    X = np.asarray(frame.X, dtype=np.float64)
    y = np.asarray(frame.y, dtype=np.float64)
    reports = X[:, col]
    if not np.isin(reports, (0.0, 1.0)).all():
        raise ValueError(f"column {rr_predictor!r} must hold report codes 0 and 1")
    n, p = X.shape
    if n <= p + 2:
        raise ValueError(f"need more than {p + 2} complete rows, got {n}")
    lik_r = design.matrix[reports.astype(np.intp), :]  # (n, 2): Pr(r_i | x)
    # start: least squares on the reports, the report share de-biased for pi
    b0, *_ = np.linalg.lstsq(X, y, rcond=None)
    slope = design.matrix[1, 1] - design.matrix[1, 0]
    b0[col] = b0[col] / slope if abs(slope) > 1e-9 else b0[col]
    pi0 = float(np.clip((reports.mean() - design.matrix[1, 0]) / slope, 0.05, 0.95))
    sigma0 = float(np.std(y - X @ b0)) or 1.0
    x0 = np.concatenate([b0, [math.log(sigma0), math.log(pi0 / (1 - pi0))]])
    with np.errstate(divide="ignore"):  # log 0 for a report impossible under one x
        args = (X, col, y, np.log(lik_r))
    res = optimize.minimize(
        _objective,
        x0,
        args=args,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-9},
    )
    x = np.asarray(res.x, dtype=np.float64)
    # observed information: central differences of the exact gradient
    k = x.size
    H = np.empty((k, k))
    for j in range(k):
        h = 1e-5 * max(1.0, abs(x[j]))
        e = np.zeros(k)
        e[j] = h
        H[:, j] = (_objective(x + e, *args)[1] - _objective(x - e, *args)[1]) / (2 * h)
    cov_x = observed_covariance(-(H + H.T) / 2)
    b, sigma, pi = _unpack(x, p)
    J = np.eye(k)  # delta method to (b, sigma, pi)
    J[p, p] = sigma
    J[p + 1, p + 1] = pi * (1 - pi)
    names = [*frame.terms, "sigma", "pi"]
    return RRLinearResult(
        params=pd.Series(np.concatenate([b, [sigma, pi]]), index=names),
        covariance=J @ cov_x @ J.T,
        llf=-float(res.fun),
        nobs=n,
        # L-BFGS can stop on a line search that no longer gains in double precision:
        # what matters is that the gradient vanishes at the optimum
        converged=bool(res.success or np.max(np.abs(res.jac)) <= 1e-6 * n),
        formula=formula,
        design=design,
    )
