"""A randomized answer as a predictor of an outcome observed in the clear.

The latent trait ``Z`` (seen only through its randomized report ``R``) predicts a clear
binary outcome ``Y`` (Blair, Imai & Zhou 2015, Section 3.2; R's
``rr::rrreg.predictor``). The joint model is

* ``Pr(Z = 1 | x) = sigmoid(x beta)`` (the sensitive-item model),
* ``Pr(Y = 1 | x, Z) = sigmoid(x gamma + delta Z)`` (the outcome model),
* ``Pr(R = r | Z = z) = P[r, z]`` (the design),

and the likelihood of a row sums over the unseen ``z``:
``sum_z P[r, z] Pr(z | x) Pr(y | x, z)``. With posterior weights ``w_z`` (the E-step of
EM) the gradient is ``sum (w_1 - sigmoid(x beta)) x`` for ``beta``,
``sum_z w_z (y - mu_z) x`` for ``gamma`` and ``sum w_1 (y - mu_1)`` for ``delta``;
the maximum is found with BFGS and the standard errors come from the observed
information (the Jacobian of the exact gradient, by central differences). rr's
default fits add weak priors (``arm::bayesglm``); this is the plain maximum likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize
from scipy.special import expit, log_expit

from .._fitting import (
    LikelihoodFit,
    hessian_from_gradient,
    model_frame,
    normal_only,
    observed_covariance,
)
from ..estimation import Summary
from ..mechanisms import Design, is_design
from ._regression import report_codes

__all__ = ["RRPredictorResult", "rr_predictor"]

_Array = NDArray[np.float64]


@dataclass(frozen=True)
class RRPredictorResult(LikelihoodFit):
    """Fitted outcome model with a randomized predictor.

    Attributes
    ----------
    params : pandas.Series
        Outcome-model coefficients (``terms``, then the randomized item by its name),
        then the sensitive-item model's coefficients prefixed ``"<item>:"``.
    covariance : ndarray
        Inverse observed information.
    llf : float
    nobs : int
    converged : bool
    formula : str

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> rng, truth = example.rng, example.truth
    >>> from deniable.analysis import rr_predictor
    >>> data["y"] = (rng.random(2000) < np.where(truth, 0.7, 0.3)).astype(int)
    >>> fit = rr_predictor("y ~ r", data, design, rr_item="r")
    >>> "r" in fit.params.index
    True
    """

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Text summary with the coefficient table (``method``: normal or None)."""
        normal_only(method)
        return Summary(
            self._summary(
                "Logistic regression with a randomized-response predictor (maximum likelihood)",
                confidence_level,
            )
        )


def _negll(x: _Array, X: _Array, y: _Array, P_r: _Array, p: int) -> tuple[float, _Array]:
    beta, gamma, delta = x[:p], x[p : 2 * p], x[2 * p]
    eta_z = X @ beta
    eta_y = X @ gamma
    lz = np.stack([log_expit(-eta_z), log_expit(eta_z)], axis=1)  # log Pr(z | x)
    ly = np.empty_like(lz)
    mu = np.empty_like(lz)
    for z in (0, 1):
        e = eta_y + delta * z
        ly[:, z] = np.where(y == 1, log_expit(e), log_expit(-e))
        mu[:, z] = expit(e)
    with np.errstate(divide="ignore"):
        logh = np.log(P_r) + lz + ly  # (n, 2)
    top = logh.max(axis=1, keepdims=True)
    h = np.exp(logh - top)
    total = h.sum(axis=1, keepdims=True)
    ll = float(np.sum(np.log(total[:, 0]) + top[:, 0]))
    w = h / total  # posterior of z
    grad = np.empty_like(x)
    grad[:p] = X.T @ (w[:, 1] - expit(eta_z))
    grad[p : 2 * p] = X.T @ (w[:, 0] * (y - mu[:, 0]) + w[:, 1] * (y - mu[:, 1]))
    grad[2 * p] = float(np.sum(w[:, 1] * (y - mu[:, 1])))
    return -ll, -grad


def _observed_hessian(x: _Array, X: _Array, y: _Array, P_r: _Array, p: int) -> _Array:
    """Hessian of the log-likelihood: central differences of the exact gradient."""
    return -hessian_from_gradient(lambda z: _negll(z, X, y, P_r, p)[1], x)


def rr_predictor(
    formula: str,
    data: pd.DataFrame,
    design: Design,
    *,
    rr_item: str,
) -> RRPredictorResult:
    """Logistic regression of a clear outcome on covariates and a randomized answer.

    Parameters
    ----------
    formula : str
        ``"outcome ~ covariates + rr_item"``; the same covariates (without the item)
        enter the sensitive-item model.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value are dropped.
    design : Design
        The design of the randomized item (two truths).
    rr_item : str
        Column holding the item's report codes (1 = "yes").

    Returns
    -------
    RRPredictorResult

    Raises
    ------
    ValueError
        If ``rr_item`` is not a term of the formula, the outcome is not 0/1, or the
        item's reports are not codes of the design.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> rng, truth = example.rng, example.truth
    >>> from deniable.analysis import rr_predictor
    >>> data["y"] = (rng.random(2000) < np.where(truth, 0.7, 0.3)).astype(int)
    >>> list(rr_predictor("y ~ r", data, design, rr_item="r").params.index)[:2]
    ['Intercept', 'r']
    """
    if not is_design(design) or design.n_truths != 2:
        raise ValueError("design must be a Design with two truths (no, yes)")
    frame = model_frame(formula, data)
    if rr_item not in frame.terms:
        raise ValueError(f"rr_item {rr_item!r} must be a term of the formula; terms: {frame.terms}")
    col = frame.terms.index(rr_item)
    keep = [i for i in range(len(frame.terms)) if i != col]
    X = frame.X[:, keep]
    terms = [frame.terms[i] for i in keep]
    reports = report_codes(frame.X[:, col], design.n_reports, rr_item)
    y = frame.y
    if not np.all((y == 0) | (y == 1)):
        raise ValueError(f"outcome {frame.response!r} must be 0/1")
    P_r = design.matrix[reports]  # (n, 2): Pr(report | z)
    p = X.shape[1]
    x0 = np.zeros(2 * p + 1)
    res = optimize.minimize(
        _negll,
        x0,
        args=(X, y, P_r, p),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-8, "maxiter": 5000},
    )
    x = np.asarray(res.x, dtype=np.float64)
    # polish with Newton steps on the exact gradient (BFGS stops on its line search)
    for _ in range(5):
        H = _observed_hessian(x, X, y, P_r, p)
        grad = -_negll(x, X, y, P_r, p)[1]
        step = np.linalg.solve(-H, grad)
        if not np.all(np.isfinite(step)):
            break
        x = x + step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    H = _observed_hessian(x, X, y, P_r, p)
    nll, ngrad = _negll(x, X, y, P_r, p)
    converged = bool(np.max(np.abs(ngrad)) < 1e-6 * max(1, len(y)))
    names = [*terms, rr_item, *(f"{rr_item}:{t}" for t in terms)]
    order = [*range(p, 2 * p), 2 * p, *range(p)]
    cov = observed_covariance(H)
    return RRPredictorResult(
        params=pd.Series(x[order], index=names),
        covariance=cov[np.ix_(order, order)],
        llf=-float(nll),
        nobs=len(y),
        converged=converged,
        formula=formula,
    )
