"""Response error in the list experiment (Blair, Imai & Chou 2018).

Some respondents do not answer by their items. *Top-coding* (``"topcode"``): with
probability ``p`` (log-odds ``alpha``) a respondent answers the largest count, ``J + 1``
on the treated list and ``J`` on the control list. *Uniform* (``"uniform"``): with
probability ``p_0`` on the control list (``p_1`` on the treated) a respondent answers a
count drawn uniformly from ``0..J`` (``0..J + 1``). Otherwise the constrained model of
:mod:`._item_count_ml` answers, ``Z ~ Bernoulli(g(x'delta))`` and ``Y(0) ~ Binomial(J,
g(x'psi))``. A row's likelihood is ``p U(y) + (1 - p) L(y)``, ``U`` the error's law and
``L`` the model's; R's ``list::ictreg(error = "topcode")`` and ``(error = "uniform")``.
The observed-data log-likelihood is maximised directly (as for the other models) and the
standard errors come from its observed information.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._fitting import inverse_information, maximise_score, score_hessian
from ._liars import log_binomial

__all__ = ["ERRORS", "ResponseErrorLikelihood", "fit_response_error"]

#: The response errors modelled, with their coefficients' names.
ERRORS = {
    "topcode": ["error.log_odds"],
    "uniform": ["error.log_odds_control", "error.log_odds_treated"],
}


class ResponseErrorLikelihood:
    """Log-likelihood and analytic score of a response error model (``error`` in
    :data:`ERRORS`) for ``theta = (delta, psi, alpha...)``: shapes ``y`` (n,) counts,
    ``t`` (n,) bool, ``x`` (n, k)."""

    def __init__(
        self,
        y: NDArray[np.float64],
        t: NDArray[np.bool_],
        x: NDArray[np.float64],
        j: int,
        error: str,
    ):
        self.y, self.t, self.x, self.j = y, t, x, j
        self.k = x.shape[1]
        self.size = 2 * self.k + len(ERRORS[error])
        if error == "topcode":  # log U: the list's largest count, one share for both
            top = np.where(t, y == j + 1, y == j)
            self.log_u = np.where(top, 0.0, -np.inf)
            self.arm = np.zeros(y.size, dtype=np.int64)
        else:  # uniform over 0..J (control) or 0..J + 1 (treated), a share an arm
            self.log_u = np.where(t, -np.log(j + 2.0), -np.log(j + 1.0))
            self.arm = t.astype(np.int64)

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        k, x, y, t, j = self.k, self.x, self.y, self.t, self.j
        e_d, e_h, alphas = x @ theta[:k], x @ theta[k : 2 * k], theta[2 * k :]
        g, h = special.expit(e_d), special.expit(e_h)
        # the constrained model: Z = 1 (treated, Y(0) = y - 1) or Z = 0 (Y(0) = y)
        with np.errstate(divide="ignore"):
            yes = np.where(t, np.log(g) + log_binomial(y - 1, j, e_h), -np.inf)
            no = np.where(t, np.log1p(-g), 0.0) + log_binomial(y, j, e_h)
        log_l = np.logaddexp(yes, no)
        w = np.where(t, np.exp(yes - log_l), 0.0)  # P(Z = 1 | y) under the model
        alpha = alphas[self.arm]
        log_p, log_1p = -np.logaddexp(0.0, -alpha), -np.logaddexp(0.0, alpha)
        ll = np.logaddexp(log_p + self.log_u, log_1p + log_l)
        share = np.exp(log_1p + log_l - ll)  # the model's share of the row's likelihood
        s_d = np.where(t, w - g, 0.0) * share
        s_h = ((1 - w) * (y - j * h) + w * (y - 1 - j * h)) * share
        s_a = (1 - share) - special.expit(alpha)  # d/d alpha of log(p U + (1 - p) L)
        per_arm = np.bincount(self.arm, weights=s_a, minlength=alphas.size)
        score = np.concatenate([x.T @ s_d, x.T @ s_h, per_arm])
        return float(ll.sum()), score


def fit_response_error(
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    x: NDArray[np.float64],
    j: int,
    error: str,
    start: NDArray[np.float64],
    max_iter: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]]:
    """The ``error`` model from the constrained fit ``start`` (``2k`` coefficients):
    ``(theta, log-likelihood, score, covariance)``, ``theta`` ending in the errors'
    log-odds."""
    lik = ResponseErrorLikelihood(y, t, x, j, error)
    begin = np.concatenate([start, np.full(len(ERRORS[error]), -4.0)])
    theta = maximise_score(lik.value_and_score, begin, max_iter)
    ll, score = lik.value_and_score(theta)
    cov = inverse_information(
        -score_hessian(lik.value_and_score, theta), "the observed information"
    )
    return theta, ll, score, cov
