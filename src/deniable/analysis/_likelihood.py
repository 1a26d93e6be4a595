"""Log-likelihood of randomized binary answers with a logistic prevalence (private).

Row ``i`` (group ``g_i``, report ``r_i``, covariates ``x_i``) has likelihood
``L_i = A[g_i, r_i](theta) + B[g_i, r_i](theta) sigmoid(x_i beta)`` (see
:mod:`deniable.analysis`). Gradient and Hessian are exact: with
``s = sigmoid(x beta)``, ``s' = s (1 - s)``, ``u_j = dA_j + dB_j s``,

* ``dl/dbeta = sum w B s' / L x``
* ``d2l/dbeta2 = sum w [B s' (1 - 2 s) / L - (B s' / L)^2] x x^T``
* ``dl/dtheta_j = sum w u_j / L``
* ``d2l/dbeta dtheta_j = sum w [dB_j s' / L - B s' u_j / L^2] x``
* ``d2l/dtheta_j dtheta_k = - sum w u_j u_k / L^2`` (A, B are affine in theta).

Fitting is Newton-Raphson on (beta, theta) with Levenberg damping and step halving,
theta kept inside its bounds (Heck & Moshagen 2018 fit the same likelihood with
``optim``; Blair, Imai & Zhou 2015 with EM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, logit

from ._group_channels import GroupModel

Array = NDArray[np.float64]


@dataclass
class Fit:
    """The optimum: parameters, log-likelihood, Hessian, convergence."""

    beta: Array
    theta: Array
    llf: float
    hessian: Array
    iterations: int
    converged: bool


def _row_terms(
    beta: Array,
    theta: Array,
    X: Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
) -> tuple[Array, Array, Array, Array, Array]:
    """Per-row ``b``, ``s = sigmoid(x beta)``, ``L = a + b s`` and the rows of dA, dB."""
    A, B, dA, dB = channel.coefficients(theta)
    b = B[groups, reports]
    s = expit(X @ beta)
    L = A[groups, reports] + b * s
    return b, s, L, dA[:, groups, reports], dB[:, groups, reports]


def loglik(
    beta: Array,
    theta: Array,
    X: Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
    weights: Array | None,
) -> tuple[float, Array, Array]:
    """Log-likelihood, gradient (p + q,) and Hessian (p + q, p + q)."""
    b, s, L, dA_rows, dB_rows = _row_terms(beta, theta, X, groups, reports, channel)
    w = np.ones_like(s) if weights is None else weights
    if np.any(L <= 0):
        return -np.inf, np.zeros(0), np.zeros((0, 0))
    ll = float(np.dot(w, np.log(L)))
    ds = s * (1.0 - s)
    bl = b * ds / L  # (n,)
    p, q = X.shape[1], theta.size
    grad = np.empty(p + q)
    hess = np.empty((p + q, p + q))
    grad[:p] = X.T @ (w * bl)
    curv = w * (b * ds * (1.0 - 2.0 * s) / L - bl**2)
    hess[:p, :p] = (X * curv[:, None]).T @ X
    if q:
        ul = (dA_rows + dB_rows * s) / L  # (q, n)
        grad[p:] = ul @ w
        cross = w * (dB_rows * ds / L - bl * ul)  # (q, n)
        hess[:p, p:] = X.T @ cross.T
        hess[p:, :p] = hess[:p, p:].T
        hess[p:, p:] = -(ul * w) @ ul.T
    return ll, grad, hess


def scores(
    beta: Array,
    theta: Array,
    X: Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
) -> Array:
    """Per-row score vectors, shape (n, p + q) (for the outer-product information)."""
    b, s, L, dA_rows, dB_rows = _row_terms(beta, theta, X, groups, reports, channel)
    cols = [X * (b * s * (1.0 - s) / L)[:, None]]
    if theta.size:
        cols.append(((dA_rows + dB_rows * s) / L).T)
    return np.hstack(cols)


def expected_information(
    beta: Array,
    theta: Array,
    X: Array,
    groups: NDArray[np.intp],
    channel: GroupModel,
    weights: Array | None,
) -> Array:
    """Expected (Fisher) information, shape (p + q, p + q).

    ``sum_i w_i sum_r g_ir g_ir^T / L_ir`` with ``L_ir = A[g_i, r] + B[g_i, r] s_i`` the
    chance of report ``r`` and ``g_ir`` its gradient: ``B[g_i, r] s_i (1 - s_i) x_i``
    for beta, ``dA[:, g_i, r] + dB[:, g_i, r] s_i`` for theta (the expectation over the
    reports of the outer product of the scores; GLMMRR's default).
    """
    A, B, dA, dB = channel.coefficients(theta)
    s = expit(X @ beta)
    ds = s * (1.0 - s)
    w = np.ones_like(s) if weights is None else weights
    p, q = X.shape[1], theta.size
    info = np.zeros((p + q, p + q))
    for r in range(A.shape[1]):
        L = A[groups, r] + B[groups, r] * s
        ok = L > 0
        grad = np.hstack(
            [X * (B[groups, r] * ds)[:, None], (dA[:, groups, r] + dB[:, groups, r] * s).T]
        )
        weight = np.where(ok, w / np.where(ok, L, 1.0), 0.0)
        info += (grad * weight[:, None]).T @ grad
    return info


def start_beta(
    X: Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
    theta: Array,
    weights: Array | None,
) -> Array:
    """Intercept at the logit of a moment estimate of the prevalence, slopes 0."""
    A, B, _, _ = channel.coefficients(theta)
    w = np.ones(len(reports)) if weights is None else weights
    # Pr(report = last symbol) is affine in pi in every group: invert group by group
    r = A.shape[1] - 1
    num = np.bincount(groups, weights=w * (reports == r), minlength=A.shape[0])
    den = np.bincount(groups, weights=w, minlength=A.shape[0])
    ok = (den > 0) & (np.abs(B[:, r]) > 1e-12)
    if np.any(ok):
        pis = (num[ok] / den[ok] - A[ok, r]) / B[ok, r]
        pi0 = float(np.average(pis, weights=den[ok]))
    else:
        pi0 = 0.5
    beta = np.zeros(X.shape[1])
    const = np.flatnonzero(np.all(X == 1.0, axis=0))
    if const.size:
        beta[const[0]] = float(logit(np.clip(pi0, 0.02, 0.98)))
    return beta


def fit(
    X: Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
    weights: Array | None = None,
    *,
    beta0: Array | None = None,
    theta0: Array | None = None,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> Fit:
    """Maximise the log-likelihood by damped Newton-Raphson."""
    theta = channel.start() if theta0 is None else np.asarray(theta0, dtype=np.float64)
    beta = start_beta(X, groups, reports, channel, theta, weights) if beta0 is None else beta0
    lo = np.array([b[0] for b in channel.bounds]) + 1e-9
    hi = np.array([b[1] for b in channel.bounds]) - 1e-9
    p = X.shape[1]
    ll, grad, hess = loglik(beta, theta, X, groups, reports, channel, weights)
    if not np.isfinite(ll):
        # a start outside the support (a report impossible at this theta): move theta
        theta = np.clip(theta, lo, hi)
        ll, grad, hess = loglik(beta, theta, X, groups, reports, channel, weights)
    if not np.isfinite(ll):  # a start that makes some report impossible: no fit from it
        size = X.shape[1] + theta.size
        return Fit(beta, theta, -np.inf, np.zeros((size, size)), 0, False)
    converged = False
    iterations = 0
    scale = max(1.0, float(len(reports) if weights is None else weights.sum()))
    while iterations < max_iter:
        iterations += 1
        damping = 0.0
        step = np.zeros_like(grad)
        for _ in range(30):
            neg = -hess + damping * np.eye(hess.shape[0])
            try:
                chol = np.linalg.cholesky(neg)
                step = np.linalg.solve(chol.T, np.linalg.solve(chol, grad))
                break
            except np.linalg.LinAlgError:
                damping = max(2 * damping, 1e-6 * scale)
        t = 1.0
        improved = False
        for _ in range(60):
            nb = beta + t * step[:p]
            nt = np.clip(theta + t * step[p:], lo, hi) if theta.size else theta
            nll, ngrad, nhess = loglik(nb, nt, X, groups, reports, channel, weights)
            if np.isfinite(nll) and nll >= ll - 1e-12 * abs(ll):
                improved = True
                break
            t /= 2
        if not improved:
            break
        change = nll - ll
        beta, theta, ll, grad, hess = nb, nt, nll, ngrad, nhess
        if abs(change) <= tol * (abs(ll) + tol) and float(np.max(np.abs(t * step))) < 1e-7:
            converged = True
            break
        # an optimum on a bound of theta: the free gradient is what must vanish
        free = np.ones(grad.size, dtype=bool)
        if theta.size:
            free[p:] = ~(((theta <= lo) & (grad[p:] < 0)) | ((theta >= hi) & (grad[p:] > 0)))
        if float(np.max(np.abs(grad[free]), initial=0.0)) < 1e-9 * scale:
            converged = True
            break
    return Fit(beta, theta, ll, hess, iterations, converged)


def negative_loglik(x: Array, p: int, data: tuple[Any, ...]) -> tuple[float, Array]:
    """``(-l, -gradient)`` at ``x = (beta, theta)`` with ``data = (X, groups, reports,
    channel, weights)``; outside the support a large value (the optimiser steps back)."""
    ll, grad, _ = loglik(x[:p], x[p:], *data)
    if not np.isfinite(ll):
        return 1e300, np.zeros_like(x)
    return -ll, -grad


def row_posteriors(
    beta: Array,
    theta: Array,
    X: Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
) -> tuple[Array, Array]:
    """Each row's ``Pr(Z = 1 | y, x) = (A + B) s / (A + B s)`` and its gradient in
    ``(beta, theta)``, shapes (n,) and (n, p + q)."""
    p = beta.size
    b, s, denom, dA_rows, dB_rows = _row_terms(beta, theta, X, groups, reports, channel)
    a = denom - b * s
    post = (a + b) * s / denom
    grad = np.empty((s.size, p + theta.size))
    grad[:, :p] = X * ((a + b) * a * s * (1 - s) / denom**2)[:, None]
    for j in range(theta.size):
        da, db = dA_rows[j], dB_rows[j]
        grad[:, p + j] = ((da + db) * s * denom - (a + b) * s * (da + db * s)) / denom**2
    return post, grad
