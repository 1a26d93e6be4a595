"""The list experiment's control count overdispersed: beta-binomial instead of binomial
(Imai 2011, section 2.4; R's ``list::ictreg(overdispersed = TRUE)``, constrained).
The unconstrained model is not offered: on R's race and affirm data its maximum puts one
group's ``rho`` on the boundary 0, where R's EM runs for over ten minutes.

Respondents differ in how likely each control item is beyond what the covariates say,
and answers to items are correlated within a person, so the control count spreads more
than a binomial does. The model: ``Y(0) ~ BetaBinomial(J, mu = g(x'psi), rho)``, with
mean ``J mu`` and variance ``J mu (1 - mu) (1 + (J - 1) rho)``, ``rho`` in (0, 1) the
intra-person correlation (``rho -> 0`` is the binomial). In the shape parameters,
``a = mu (1 - rho) / rho`` and ``b = (1 - mu) (1 - rho) / rho``; the coefficient
reported is ``logit(rho)``, as R's ``par.overdispersion``. The sensitive answer ``Z ~
Bernoulli(g(x'delta))`` and the count reported is ``Y(0) + T Z``. The log-likelihood and
its score (through digamma functions) are exact; the fit maximises it directly (R runs
EM with ``VGAM::vglm``'s beta-binomial M-step).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._likelihood import inverse_information, maximise_score, score_hessian

__all__ = ["THETA_BOUND", "fit_overdispersed", "log_beta_binomial"]

#: ``|logit rho|`` is held within this (rho in (1e-13, 1 - 1e-13)); beyond it the
#: log-likelihood is flat in ``logit rho`` (a fit there has reached the binomial).
THETA_BOUND = 30.0


def log_beta_binomial(
    y: NDArray[np.float64], j: int, eta: NDArray[np.float64], theta: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``log BetaBinomial(y; j, mu = g(eta), rho = g(theta))`` and its derivatives in
    ``eta`` and ``theta``, each of ``y``'s shape (counts in ``0..j``)."""
    mu = special.expit(eta)
    inside = abs(theta) <= THETA_BOUND
    theta = min(max(theta, -THETA_BOUND), THETA_BOUND)  # rho within (1e-13, 1 - 1e-13)
    s = math.exp(-theta)  # (1 - rho) / rho = a + b
    a, b = mu * s, (1 - mu) * s
    log_pmf = (
        special.gammaln(j + 1)
        - special.gammaln(y + 1)
        - special.gammaln(j - y + 1)
        + special.betaln(y + a, j - y + b)
        - special.betaln(a, b)
    )
    common = special.digamma(s) - special.digamma(j + s)
    da = special.digamma(y + a) - special.digamma(a) + common
    db = special.digamma(j - y + b) - special.digamma(b) + common
    d_theta = -(a * da + b * db) if inside else np.zeros_like(log_pmf)
    return log_pmf, mu * (1 - mu) * s * (da - db), d_theta


class _Overdispersed:
    """The constrained model's log-likelihood and score with a beta-binomial control
    count: ``theta = (delta, psi, logit rho)``."""

    def __init__(
        self, y: NDArray[np.float64], t: NDArray[np.bool_], x: NDArray[np.float64], j: int
    ):
        self.y, self.t, self.x, self.j = y, t, x, j
        self.k = x.shape[1]

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        k, x, y, t, j = self.k, self.x, self.y, self.t, self.j
        e_d, e_h, rho = x @ theta[:k], x @ theta[k : 2 * k], float(theta[-1])
        lz1, dz1, tz1 = log_beta_binomial(np.clip(y - 1, 0, j), j, e_h, rho)  # Z = 1
        lz0, dz0, tz0 = log_beta_binomial(np.clip(y, 0, j), j, e_h, rho)  # Z = 0
        log_g, log_1g = -np.logaddexp(0, -e_d), -np.logaddexp(0, e_d)
        la = np.where(t & (y >= 1), log_g + lz1, -np.inf)
        lb = np.where(t, np.where(y <= j, log_1g + lz0, -np.inf), lz0)
        la = np.where(t, la, -np.inf)
        ll = np.logaddexp(la, lb)
        w = np.exp(la - ll)  # P(Z = 1 | report); 0 on the control rows
        s_delta = np.where(t, w - special.expit(e_d), 0.0)
        s_psi = w * dz1 + (1 - w) * dz0
        s_rho = w * tz1 + (1 - w) * tz0
        score = np.concatenate([x.T @ s_delta, x.T @ s_psi, [float(s_rho.sum())]])
        return float(ll.sum()), score


def fit_overdispersed(
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    x: NDArray[np.float64],
    j: int,
    start: NDArray[np.float64],
    max_iter: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64], list[str]]:
    """The overdispersed model from the binomial fit ``start`` (``(delta, psi)``) and
    ``rho = 0.05``: ``(theta, log-likelihood, score, covariance, ["control.overdispersion"])``.

    Raises
    ------
    ValueError
        When the observed information is singular (the data identify no model).
    """
    lik = _Overdispersed(y, t, x, j)
    theta = maximise_score(lik.value_and_score, np.append(start, special.logit(0.05)), max_iter)
    ll, score = lik.value_and_score(theta)
    cov = inverse_information(
        -score_hessian(lik.value_and_score, theta), "the observed information"
    )
    return theta, ll, score, cov, ["control.overdispersion"]
