"""Top-coding response error in the list experiment (Blair, Imai & Chou 2018).

Some respondents answer the largest count whatever their items: ``J + 1`` on the
treated list, ``J`` on the control list. With probability ``p`` (log-odds ``alpha``) a
respondent top-codes; otherwise the constrained model of :mod:`._item_count_ml`
answers, ``Z ~ Bernoulli(g(x'delta))`` and ``Y(0) ~ Binomial(J, g(x'psi))``. A row's
likelihood is ``p [the count is the list's largest] + (1 - p) L(y)``, ``L`` the
constrained model's; R's ``list::ictreg(error = "topcode")``. The observed-data
log-likelihood is maximised directly (as for the other models) and the standard errors
come from its observed information.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._likelihood import maximise_score, score_hessian
from ._liars import log_binomial

__all__ = ["TopCodedLikelihood", "fit_top_coded"]


class TopCodedLikelihood:
    """Log-likelihood and analytic score of the top-coding error model for ``theta =
    (delta, psi, alpha)``: shapes ``y`` (n,) counts, ``t`` (n,) bool, ``x`` (n, k)."""

    def __init__(
        self, y: NDArray[np.float64], t: NDArray[np.bool_], x: NDArray[np.float64], j: int
    ):
        self.y, self.t, self.x, self.j = y, t, x, j
        self.k = x.shape[1]
        self.size = 2 * self.k + 1
        self.top = np.where(t, y == j + 1, y == j)

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        k, x, y, t, j = self.k, self.x, self.y, self.t, self.j
        e_d, e_h, alpha = x @ theta[:k], x @ theta[k : 2 * k], float(theta[2 * k])
        g, h = special.expit(e_d), special.expit(e_h)
        # the constrained model: Z = 1 (treated, Y(0) = y - 1) or Z = 0 (Y(0) = y)
        with np.errstate(divide="ignore"):
            yes = np.where(t, np.log(g) + log_binomial(y - 1, j, e_h), -np.inf)
            no = np.where(t, np.log1p(-g), 0.0) + log_binomial(y, j, e_h)
        log_l = np.logaddexp(yes, no)
        w = np.where(t, np.exp(yes - log_l), 0.0)  # P(Z = 1 | y) under the model
        log_p, log_1p = -np.logaddexp(0.0, -alpha), -np.logaddexp(0.0, alpha)
        ll = np.where(self.top, np.logaddexp(log_p, log_1p + log_l), log_1p + log_l)
        share = np.exp(log_1p + log_l - ll)  # the model's share of the row's likelihood
        s_d = np.where(t, w - g, 0.0) * share
        s_h = ((1 - w) * (y - j * h) + w * (y - 1 - j * h)) * share
        p = float(special.expit(alpha))
        s_a = np.where(self.top, (1 - share) - p, -p)
        score = np.concatenate([x.T @ s_d, x.T @ s_h, [float(s_a.sum())]])
        return float(ll.sum()), score


def fit_top_coded(
    y: NDArray[np.float64],
    t: NDArray[np.bool_],
    x: NDArray[np.float64],
    j: int,
    start: NDArray[np.float64],
    max_iter: int,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]]:
    """The top-coding model from the constrained fit ``start`` (``2k`` coefficients):
    ``(theta, log-likelihood, score, covariance)``, ``theta`` ending in ``alpha``."""
    lik = TopCodedLikelihood(y, t, x, j)
    theta = maximise_score(lik.value_and_score, np.concatenate([start, [-4.0]]), max_iter)
    ll, score = lik.value_and_score(theta)
    cov = np.asarray(np.linalg.inv(-score_hessian(lik.value_and_score, theta)), dtype=np.float64)
    return theta, ll, score, cov
