"""The likelihood of RRlin's model (private to :mod:`deniable.analysis`): the
cells of the randomized predictors, each row's mixture over them, its exact gradient,
the covariance within the optimiser's box, and the projected gradient."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._fitting import hessian_from_gradient, observed_covariance
from ._group_channels import GroupModel

_Array = NDArray[np.float64]
_LOG_2PI = math.log(2 * math.pi)


def _exp(x: float) -> float:
    return math.exp(x) if x < 700 else math.inf


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def _cells(m: int) -> _Array:
    """The ``2^m`` cells of ``m`` yes/no predictors, shape (2^m, m), the first varying
    slowest (RRlin's order ``0:0, 0:1, 1:0, 1:1``)."""
    grid = (np.arange(2**m)[:, None] >> np.arange(m - 1, -1, -1)[None, :]) & 1
    return grid.astype(np.float64)


def _prevalence(theta: _Array) -> _Array:
    """Cell probabilities from the free logits (the first cell's fixed at 0)."""
    z = np.concatenate([[0.0], theta])
    e = np.exp(z - z.max())
    return np.asarray(e / e.sum())


@dataclass(frozen=True)
class _Predictor:
    """A randomized predictor: its channel, each row's group and report codes, and
    the channel parameters (fixed, or free at ``x[free]``)."""

    channel: GroupModel
    groups: NDArray[np.intp]
    reports: NDArray[np.intp]
    theta: _Array
    free: slice | None

    @functools.cached_property
    def log_fixed(self) -> _Array:
        """``log Pr(report_i | truth)`` at the fixed parameters, shape (2, n)."""
        with np.errstate(divide="ignore"):  # log 0 for a report impossible in a truth
            return np.log(self.probabilities(self.theta)[0])

    def probabilities(self, x: _Array) -> tuple[_Array, _Array | None]:
        """``Pr(report_i | truth)`` of each row, shape (2, n), and with free parameters
        its derivative in them, shape (q, 2, n)."""
        theta = x[self.free] if self.free is not None else self.theta
        A, B, dA, dB = self.channel.coefficients(theta)
        a, b = A[self.groups, self.reports], B[self.groups, self.reports]
        prob = np.stack([a, a + b])
        if self.free is None:
            return prob, None
        da, db = dA[:, self.groups, self.reports], dB[:, self.groups, self.reports]
        return prob, np.stack([da, da + db], axis=1)


@dataclass(frozen=True)
class _Model:
    X: _Array
    cols: list[int]
    cells: _Array
    y: _Array
    predictors: list[_Predictor]


def _objective(x: _Array, model: _Model) -> tuple[float, _Array]:
    """Negative log-likelihood and gradient in (b, log sigma, logits of pi, free
    channel parameters); the sums are taken directly (the optimiser's hot path)."""
    ll, parts = _terms(x, model)
    w, z2, wr, pi, theta_scores = parts
    X, cols, cells, p, K = model.X, model.cols, model.cells, model.X.shape[1], pi.size
    grad = np.empty(x.size)
    # d/db: sum_c w_ci resid_ci / sigma^2 * d mean_ci / db; the randomized terms'
    # columns hold reports, not cells, so their entries are replaced below
    grad[:p] = X.T @ wr.sum(axis=0)
    grad[cols] = cells.T @ wr.sum(axis=1)
    grad[p] = float(np.sum(w * z2)) - ll.size  # d/dlog sigma
    grad[p + 1 : p + K] = (w.sum(axis=1) - ll.size * pi)[1:]  # d/dlogit pi_c, c >= 1
    for free, dprob, score in theta_scores:
        grad[free] = np.einsum("qvn,vn->q", dprob, score)
    return -float(ll.sum()), -grad


def _row_terms(x: _Array, model: _Model) -> tuple[_Array, _Array]:
    """Each row's log-likelihood, shape (n,), and score (its gradient in ``x``),
    shape (n, k); they sum to ``_objective``'s (negated)."""
    ll, parts = _terms(x, model)
    w, z2, wr, pi, theta_scores = parts
    X, cols, cells, p, K = model.X, model.cols, model.cells, model.X.shape[1], pi.size
    scores = np.empty((ll.size, x.size))
    scores[:, :p] = X * wr.sum(axis=0)[:, None]
    scores[:, cols] = (cells.T @ wr).T
    scores[:, p] = (w * z2).sum(axis=0) - 1.0
    scores[:, p + 1 : p + K] = (w - pi[:, None]).T[:, 1:]
    for free, dprob, score in theta_scores:
        scores[:, free] = np.einsum("qvn,vn->nq", dprob, score)
    return ll, scores


def _terms(x: _Array, model: _Model) -> tuple[_Array, tuple[Any, ...]]:
    """Each row's log-likelihood, shape (n,), and what its derivatives are made of:
    the rows' posteriors over the cells ``w``, squared standardised residuals and
    ``w resid / sigma^2`` (each (K, n)), the cell prevalences ``pi`` and,
    per predictor with free channel parameters, its slice, ``d Pr / d theta`` (q, 2,
    n) and the posterior of its truth over ``Pr`` (2, n)."""
    X, cols, cells, y = model.X, model.cols, model.cells, model.y
    p, K = X.shape[1], cells.shape[0]
    b, sigma = x[:p], math.exp(x[p])
    pi = _prevalence(x[p + 1 : p + K])
    # log Pr(reports of row i | cell c) = sum_j log Pr(r_ij | c_j): (K, n)
    log_lik_r = np.zeros((K, y.size))
    derivs = []
    for j, pred in enumerate(model.predictors):
        if pred.free is None:  # held fixed: its log-probabilities computed once
            log_prob, prob, dprob = pred.log_fixed, None, None
        else:
            prob, dprob = pred.probabilities(x)
            with np.errstate(divide="ignore"):  # log 0 for a report impossible in a cell
                log_prob = np.log(prob)
        log_lik_r += log_prob[cells[:, j].astype(np.intp), :]
        derivs.append((prob, dprob))
    base = X @ b - X[:, cols] @ b[cols]  # the mean without the randomized terms
    # cells along the first axis, rows along the second (reductions over the few cells
    # are then elementwise over rows)
    resid = (y - base)[None, :] - (cells @ b[cols])[:, None]  # (K, n)
    z2 = (resid / sigma) ** 2
    with np.errstate(divide="ignore"):  # a cell of prevalence 0
        log_prior = np.log(pi)
    joint = (log_prior[:, None] + log_lik_r) - 0.5 * z2
    top = joint.max(axis=0)
    e = np.exp(joint - top)
    total = e.sum(axis=0)
    w = e / total  # each row's posterior over the cells
    ll = top + np.log(total) - (math.log(sigma) + 0.5 * _LOG_2PI)
    theta_scores = []
    for j, (pred, (prob, dprob)) in enumerate(zip(model.predictors, derivs, strict=True)):
        if prob is None or dprob is None:
            continue
        # each row's posterior of the predictor's truth, (2, n), over the probability
        # of its report: times d Pr / d theta, the score in theta
        truth = np.stack([w[cells[:, j] == v].sum(axis=0) for v in (0.0, 1.0)])
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(truth > 0, truth / prob, 0.0)
        theta_scores.append((pred.free, dprob, score))
    return ll, (w, z2, w * resid / sigma**2, pi, theta_scores)


def _covariance_within_bounds(
    x: _Array, model: _Model, bounds: list[tuple[float | None, float | None]]
) -> tuple[_Array, NDArray[np.intp]]:
    """Inverse observed information (central differences of the exact gradient) over
    the coordinates inside their bounds, and the coordinates on a bound (a channel
    parameter such as the SLD's ``t`` at 1), where the likelihood is not defined on
    both sides: they are held fixed, with zero rows and columns here."""
    on = np.array(
        [
            (lo is not None and x[i] <= lo) or (hi is not None and x[i] >= hi)
            for i, (lo, hi) in enumerate(bounds)
        ],
        dtype=bool,
    )
    inside = np.flatnonzero(~on)

    def gradient(z: _Array) -> _Array:
        full = x.copy()
        full[inside] = z
        return _objective(full, model)[1][inside]

    cov = np.zeros((x.size, x.size))
    cov[np.ix_(inside, inside)] = observed_covariance(-hessian_from_gradient(gradient, x[inside]))
    return cov, np.flatnonzero(on)


def _undefined_at_bound(cov: _Array, rows: NDArray[np.intp]) -> _Array:
    """``cov`` with the rows and columns of parameters on a bound set to NaN (no
    standard error: the estimate's distribution there is not normal)."""
    cov = cov.copy()
    cov[rows, :] = np.nan
    cov[:, rows] = np.nan
    return cov


def _label(parameter: str, predictor: str, m: int) -> str:
    """A channel parameter's name: ``"t"`` with one randomized predictor, ``"t[r]"``
    with several."""
    return parameter if m == 1 else f"{parameter}[{predictor}]"


def _projected_gradient(
    jac: _Array, x: _Array, bounds: list[tuple[float | None, float | None]]
) -> float:
    """Largest gradient component that could still move ``x`` inside its box."""
    g = np.asarray(jac, dtype=np.float64).copy()
    for i, (lo, hi) in enumerate(bounds):
        if (lo is not None and x[i] <= lo and g[i] > 0) or (
            hi is not None and x[i] >= hi and g[i] < 0
        ):
            g[i] = 0.0
    return float(np.max(np.abs(g)))
