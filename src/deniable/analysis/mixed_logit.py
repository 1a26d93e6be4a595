"""Mixed-effects logistic regression of a randomized answer (as GLMMRR's ``RRglmer``).

Row ``i`` of cluster ``g`` reports "yes" with chance ``c_i + d_i sigmoid(x_i beta + u_g)``,
``(c_i, d_i)`` its design's line (:class:`~deniable.mechanisms.Design`, one per design
group), ``u_g ~ N(0, tau^2)`` a random intercept (Fox, Klotzke & Veen 2018). The marginal
likelihood of a cluster, ``int prod_i L_i(u) phi(u; 0, tau) du``, is computed by adaptive
Gauss-Hermite quadrature (Pinheiro & Bates 1995): centred at each cluster's mode of the
integrand (Newton steps vectorised over clusters), scaled by its curvature, with
``quadrature`` nodes (1 is the Laplace approximation). ``(beta, log tau)`` maximise it
(L-BFGS), and the standard errors come from the observed information (central
differences of the marginal log-likelihood).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize
from scipy.special import expit

from ..mechanisms.designs import Design
from ..validation import check_integer
from ._formula import model_frame
from ._results import LikelihoodFit, normal_only, observed_covariance
from .channels import as_channel
from .regression import report_codes, rr_logit

__all__ = ["RRMixedLogitResult", "rr_mixed_logit"]

_Array = NDArray[np.float64]
_RANDOM = re.compile(r"\+\s*\(\s*1\s*\|\s*([A-Za-z_.][A-Za-z0-9_.]*)\s*\)")
_NEWTON_STEPS = 30


@dataclass(frozen=True)
class RRMixedLogitResult(LikelihoodFit):
    """A fitted random-intercept logistic regression of a randomized answer.

    Attributes
    ----------
    params : pandas.Series
        Fixed effects by term, then ``tau`` (standard deviation of the random intercept).
    covariance : ndarray
        Inverse observed information (delta method for ``tau``).
    random_effects : pandas.Series
        Each cluster's conditional mode of ``u_g``.
    quadrature : int
        Gauss-Hermite nodes per cluster (1 = Laplace).
    """

    random_effects: pd.Series = field(repr=False, default_factory=pd.Series)
    quadrature: int = 1

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> str:
        """Model, fit statistics and the coefficient table (Wald intervals)."""
        normal_only(method)
        return self._summary(
            "Mixed-effects logistic regression of a randomized answer "
            f"(adaptive Gauss-Hermite, {self.quadrature} node(s))",
            confidence_level,
            f"Clusters: {self.random_effects.size}",
        )


class _Model:
    """The data of a fit and its marginal log-likelihood."""

    def __init__(
        self,
        X: _Array,
        a: _Array,
        b: _Array,
        cluster: NDArray[np.intp],
        q: int,
        curvature: str = "observed",
    ) -> None:
        self.X, self.a, self.b = X, a, b
        self.expected = curvature == "expected"
        self.cluster = cluster
        self.G = int(cluster.max()) + 1
        nodes, weights = np.polynomial.hermite.hermgauss(q)
        self.nodes, self.log_weights = nodes, np.log(weights)
        self.mode = np.zeros(self.G)

    def _terms(self, eta: _Array, u: _Array) -> tuple[_Array, _Array, _Array]:
        """Per row: log L, d log L / du, d2 log L / du2 at random intercepts ``u``."""
        s = expit(eta + u[self.cluster])
        ds = s * (1 - s)
        # Pr(report) = a + b s for the observed report (yes: c + d s; no: 1 - c - d s)
        L = self.a + self.b * s
        dL = self.b * ds
        d2L = self.b * ds * (1 - 2 * s)
        return np.log(L), dL / L, d2L / L - (dL / L) ** 2

    def loglik(self, beta: _Array, tau: float) -> float:
        eta = self.X @ beta
        u = self.mode.copy()
        for _ in range(_NEWTON_STEPS):  # each cluster's mode of h(u)
            _, g, h = self._terms(eta, u)
            grad = np.bincount(self.cluster, g, self.G) - u / tau**2
            curv = np.bincount(self.cluster, h, self.G) - 1 / tau**2
            step = grad / curv
            u = u - np.clip(step, -2.0, 2.0)
            if np.max(np.abs(step)) < 1e-10:
                break
        self.mode = u
        if self.expected:  # lme4's PIRLS weights (d mu / d eta)^2 / (mu (1 - mu))
            s = expit(eta + u[self.cluster])
            L = self.a + self.b * s
            h = -((self.b * s * (1 - s)) ** 2) / (L * (1 - L))
        else:
            _, _, h = self._terms(eta, u)
        scale = 1 / np.sqrt(-(np.bincount(self.cluster, h, self.G) - 1 / tau**2))
        parts = []
        for x, lw in zip(self.nodes, self.log_weights, strict=True):
            at = u + math.sqrt(2) * scale * x
            logL, _, _ = self._terms(eta, at)
            hq = np.bincount(self.cluster, logL, self.G) - 0.5 * (at / tau) ** 2
            parts.append(lw + x**2 + hq)
        stacked = np.stack(parts)
        top = stacked.max(axis=0)
        total = top + np.log(np.exp(stacked - top).sum(axis=0))
        # int exp(h) du ~ sqrt(2) scale sum_q w_q exp(x_q^2 + h(u + sqrt(2) scale x_q)),
        # with the normal density's constant -log(tau sqrt(2 pi))
        per = total + np.log(math.sqrt(2) * scale) - math.log(tau * math.sqrt(2 * math.pi))
        return float(per.sum())


def rr_mixed_logit(
    formula: str,
    data: pd.DataFrame,
    design: Design | Mapping[Hashable, Design],
    *,
    group: str | None = None,
    quadrature: int = 1,
    curvature: str = "observed",
) -> RRMixedLogitResult:
    """Random-intercept logistic regression of a randomized yes/no answer.

    Parameters
    ----------
    formula : str
        ``"y ~ x1 + x2 + (1 | cluster)"``: the response holds report codes 0/1; exactly
        one random-intercept term ``(1 | column)``.
    data : pandas.DataFrame
        Rows with a missing value in a used column are dropped.
    design : Design or mapping of group value to Design
        Yes/no designs; with several, ``group`` names the column choosing each row's.
    group : str, optional
        Column of design keys (designs varying by respondent: :func:`designs_by_row`).
    quadrature : int in [1, 50], default 1
        Adaptive Gauss-Hermite nodes per cluster (1 = Laplace; GLMMRR uses Laplace).
    curvature : {"observed", "expected"}, default "observed"
        What scales the quadrature around each cluster's mode: the exact second
        derivative of the cluster's log-integrand, or lme4's (and so GLMMRR's) penalised
        iteratively reweighted least squares weights ``(d mu / d eta)^2 / (mu (1 -
        mu))``, which for the randomized-response link (not canonical) differ from it.
        The two Laplace approximations differ; as ``quadrature`` grows both tend to the
        same marginal likelihood.

    Returns
    -------
    RRMixedLogitResult

    Raises
    ------
    ValueError
        For a formula without exactly one ``(1 | column)`` term, unknown columns,
        responses other than 0/1, or designs that are not yes/no.
    """
    q = check_integer("quadrature", quadrature, minimum=1)
    if q > 50:
        raise ValueError(f"quadrature must be in 1..50, got {q}")
    if curvature not in ("observed", "expected"):
        raise ValueError(f"curvature must be 'observed' or 'expected', got {curvature!r}")
    found = _RANDOM.findall(formula)
    if len(found) != 1:
        raise ValueError("formula must hold exactly one random intercept '+ (1 | column)'")
    cluster_col = found[0]
    if cluster_col not in data.columns:
        raise ValueError(f"cluster column {cluster_col!r} is not in data")
    fixed = _RANDOM.sub("", formula).strip()
    data = data[data[cluster_col].notna()]  # a row without its cluster is not used
    channel = as_channel(design)
    if channel.n_reports != 2:
        raise ValueError("rr_mixed_logit needs yes/no designs")
    frame = model_frame(fixed, data)
    rows = frame.rows
    y = report_codes(frame.y, 2, frame.response)
    keys = data.loc[rows, group].to_numpy() if group is not None else None
    groups = channel.group_codes(keys, len(rows))
    A, B, _, _ = channel.coefficients(np.empty(0))
    a = A[groups, y]
    b = B[groups, y]
    clusters = data.loc[rows, cluster_col]
    labels, cluster = np.unique(clusters.to_numpy(), return_inverse=True)
    X = np.asarray(frame.X, dtype=np.float64)
    model = _Model(X, a, b, cluster.astype(np.intp), q, curvature)
    p = X.shape[1]

    def negll(theta: _Array) -> float:
        value = model.loglik(theta[:p], math.exp(theta[p]))
        return -value if math.isfinite(value) else 1e300

    start_fit = rr_logit(fixed, data.loc[rows], design, group=group)
    x0 = np.concatenate([start_fit.params.to_numpy()[:p], [math.log(0.5)]])
    res = optimize.minimize(
        negll, x0, method="L-BFGS-B", options={"maxiter": 500, "ftol": 1e-14, "gtol": 1e-7}
    )
    x = np.asarray(res.x, dtype=np.float64)
    k = x.size
    H = np.empty((k, k))
    f0 = negll(x)
    steps = 1e-4 * np.maximum(1.0, np.abs(x))
    for i in range(k):
        for j in range(i, k):
            ei = np.zeros(k)
            ej = np.zeros(k)
            ei[i], ej[j] = steps[i], steps[j]
            if i == j:
                H[i, i] = (negll(x + ei) - 2 * f0 + negll(x - ei)) / steps[i] ** 2
            else:
                H[i, j] = H[j, i] = (
                    negll(x + ei + ej)
                    - negll(x + ei - ej)
                    - negll(x - ei + ej)
                    + negll(x - ei - ej)
                ) / (4 * steps[i] * steps[j])
    cov_x = observed_covariance(-H)
    tau = math.exp(x[p])
    J = np.eye(k)
    J[p, p] = tau
    model.loglik(x[:p], tau)  # the modes at the optimum
    return RRMixedLogitResult(
        params=pd.Series(np.concatenate([x[:p], [tau]]), index=[*frame.terms, "tau"]),
        covariance=J @ cov_x @ J.T,
        llf=-f0,
        nobs=len(rows),
        converged=bool(res.success),
        formula=formula,
        random_effects=pd.Series(model.mode, index=pd.Index(labels, name=cluster_col)),
        quadrature=q,
    )
