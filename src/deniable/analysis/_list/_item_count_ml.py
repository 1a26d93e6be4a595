"""Maximum likelihood regression for the list experiment (Imai 2011; Blair & Imai 2012).

The model: the sensitive answer ``Z ~ Bernoulli(g(x'delta))`` and the control count
``Y(0) | Z = z ~ Binomial(J, g(x'psi_z))``, with ``g`` the logistic function. A treated
report is ``Y(0) + Z``, a control report ``Y(0)``. *Constrained* (Imai 2011, Table 1
columns 5-6): ``psi_0 = psi_1``; *unconstrained*: the control items may depend on the
sensitive answer. The observed-data log-likelihood is maximised directly (BFGS, then
Newton steps on its numerical Hessian from the analytic score), where R's
``list::ictreg(method = "ml")`` runs EM; standard errors come from the observed
information, as R's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize, special, stats

from ...estimation import ConfidenceInterval
from .._formula import model_frame
from .._likelihood import maximise_score, score_hessian
from ._item_count import check_list_counts

__all__ = ["ListRegressionResult", "list_regression"]


def _log_binom(k: NDArray[np.float64], j: int, eta: NDArray[np.float64]) -> NDArray[np.float64]:
    """log Binomial(k; j, logistic(eta)), -inf outside 0..j."""
    inside = (k >= 0) & (k <= j)
    kk = np.clip(k, 0, j)
    out = (
        special.gammaln(j + 1)
        - special.gammaln(kk + 1)
        - special.gammaln(j - kk + 1)
        - kk * np.logaddexp(0, -eta)
        - (j - kk) * np.logaddexp(0, eta)
    )
    return np.where(inside, out, -np.inf)


class _Likelihood:
    """Observed-data log-likelihood and score of the standard design."""

    def __init__(
        self,
        y: NDArray[np.float64],
        t: NDArray[np.bool_],
        x: NDArray[np.float64],
        j: int,
        constrained: bool,
    ):
        self.y, self.t, self.x, self.j, self.constrained = y, t, x, j, constrained
        self.k = x.shape[1]

    def split(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        k = self.k
        delta = theta[:k]
        psi0 = theta[k : 2 * k]
        psi1 = psi0 if self.constrained else theta[2 * k : 3 * k]
        return delta, psi0, psi1

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        delta, psi0, psi1 = self.split(theta)
        x, y, t, j = self.x, self.y, self.t, self.j
        e_d, e0, e1 = x @ delta, x @ psi0, x @ psi1
        log_g, log_1g = -np.logaddexp(0, -e_d), -np.logaddexp(0, e_d)
        # the count of control items under Z = 1 and Z = 0
        a = np.where(t, y - 1, y)
        la = log_g + _log_binom(a, j, e1)
        lb = log_1g + _log_binom(y, j, e0)
        if self.constrained:  # control rows: the binomial alone
            la = np.where(t, la, -np.inf)
            lb = np.where(t, lb, _log_binom(y, j, e0))
        ll = np.logaddexp(la, lb)
        w = np.exp(la - ll)  # posterior P(Z = 1 | report)
        g = np.exp(log_g)
        p0, p1 = special.expit(e0), special.expit(e1)
        s_delta = (w - g) if not self.constrained else np.where(t, w - g, 0.0)
        s0 = (1 - w) * (y - j * p0)
        s1 = w * (a - j * p1)
        if self.constrained:
            score = np.concatenate([x.T @ s_delta, x.T @ (s0 + s1)])
        else:
            score = np.concatenate([x.T @ s_delta, x.T @ s0, x.T @ s1])
        return float(ll.sum()), score


def _start(lik: _Likelihood) -> NDArray[np.float64]:
    """Logistic-binomial fit of the control counts for psi; delta's intercept from
    the difference in means, other slopes 0."""
    x, y, t, j = lik.x, lik.y, lik.t, lik.j
    xc, yc = x[~t], y[~t]

    def nll(psi: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = xc @ psi
        return -float(_log_binom(yc, j, eta).sum()), -(xc.T @ (yc - j * special.expit(eta)))

    psi = optimize.minimize(nll, np.zeros(lik.k), jac=True, method="BFGS").x
    diff = float(np.clip(y[t].mean() - yc.mean(), 0.02, 0.98))
    delta = np.zeros(lik.k)
    delta[0] = special.logit(diff)
    return np.concatenate([delta, psi] + ([] if lik.constrained else [psi]))


@dataclass(frozen=True)
class ListRegressionResult:
    """A fitted list-experiment regression.

    Attributes
    ----------
    params : pandas.Series
        Coefficients labelled ``sensitive.<term>`` (``delta``), ``control.<term>``
        (constrained) or ``control.psi0.<term>`` and ``control.psi1.<term>``.
    bse : pandas.Series
        Standard errors from the observed information.
    cov_params : pandas.DataFrame
        The inverse observed information.
    llf : float
        The maximised log-likelihood.
    prevalence : float
        Mean over the rows of ``g(x'delta)``: the estimated prevalence of the item.
    prevalence_se : float
        Its delta-method standard error (covariates held at the sample).
    n : int
    items : int
    constrained : bool
    converged : bool
        The score's largest entry is below 1e-6 at the estimate.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> n = 2000
    >>> t = rng.integers(0, 2, n)
    >>> x = rng.normal(size=n)
    >>> z = rng.random(n) < 1 / (1 + np.exp(1 - x))
    >>> data = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "x": x, "treat": t})
    >>> fit = list_regression("y ~ x", data, treat="treat", items=3)
    >>> fit.params.round(2).tolist()
    [-0.87, 1.23, 0.06, -0.06]
    >>> round(fit.prevalence, 3), round(fit.prevalence_se, 3)
    (0.342, 0.034)
    """

    params: pd.Series
    bse: pd.Series
    cov_params: pd.DataFrame
    llf: float
    prevalence: float
    prevalence_se: float
    n: int
    items: int
    constrained: bool
    converged: bool

    def conf_int(self, level: float = 0.95) -> ConfidenceInterval[pd.Series]:
        """Wald intervals of the coefficients."""
        z = float(stats.norm.ppf(0.5 + level / 2))
        return ConfidenceInterval(self.params - z * self.bse, self.params + z * self.bse)


def list_regression(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    constrained: bool = True,
    max_iter: int = 50,
) -> ListRegressionResult:
    """Maximum likelihood regression of a list experiment (Imai 2011).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"`` (Wilkinson formula; the response is the reported
        count). The same covariates enter the sensitive and the control model.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    treat : str
        Column: 1 where the list held the sensitive item, 0 otherwise.
    items : int in 1..50
        ``J``, the number of control items.
    constrained : bool, default True
        ``psi_0 = psi_1`` (Imai 2011's constrained model); False lets the control
        items' probability depend on the sensitive answer.
    max_iter : int, default 50
        Newton steps at most after BFGS.

    Returns
    -------
    ListRegressionResult
        Coefficients, observed-information standard errors, log-likelihood and the
        estimated prevalence.

    Raises
    ------
    ValueError
        On a malformed formula, column or report (see :func:`check_list_counts`).

    Examples
    --------
    See :class:`ListRegressionResult`. On R's ``race`` data, ``"y ~ south + age +
    male + college"`` with ``items=3`` reproduces Imai (2011, Table 1, columns 5-6).
    """
    if treat not in data.columns:
        raise ValueError(
            f"treat must name a column of data; columns: {', '.join(map(str, data.columns))}"
        )
    frame = model_frame(formula, data)
    t_raw = data.loc[frame.rows, treat].to_numpy()
    y, t, j = check_list_counts(
        frame.y, t_raw.astype(np.float64) if t_raw.dtype == bool else t_raw, items
    )
    lik = _Likelihood(y, t, frame.X, j, constrained)
    theta = maximise_score(lik.value_and_score, _start(lik), max_iter)
    ll, score = lik.value_and_score(theta)
    cov = np.linalg.inv(-score_hessian(lik.value_and_score, theta))
    terms = frame.terms
    names = [f"sensitive.{s}" for s in terms]
    names += (
        [f"control.{s}" for s in terms]
        if constrained
        else [f"control.psi0.{s}" for s in terms] + [f"control.psi1.{s}" for s in terms]
    )
    k = lik.k
    g = special.expit(frame.X @ theta[:k])
    grad = (g * (1 - g)) @ frame.X / len(g)
    prev_se = math.sqrt(float(grad @ cov[:k, :k] @ grad))
    return ListRegressionResult(
        params=pd.Series(theta, index=names),
        bse=pd.Series(np.sqrt(np.diag(cov)), index=names),
        cov_params=pd.DataFrame(cov, index=names, columns=names),
        llf=ll,
        prevalence=float(g.mean()),
        prevalence_se=prev_se,
        n=len(y),
        items=j,
        constrained=constrained,
        converged=bool(np.abs(score).max() < 1e-6),
    )
