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
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize, special

from .._fitting import (
    PredictedPrevalence,
    inverse_information,
    maximise_score,
    model_frame,
    score_hessian,
)
from ._channel import ChannelLikelihood
from ._item_count import channel_matrix, check_list_counts
from ._liars import LiarPrior, fit_liars, log_binomial
from ._list_fit import ListFit
from ._overdispersed import fit_overdispersed, fit_unconstrained
from ._prediction import delta_prevalence, prediction_rows
from ._response_error import ERRORS, fit_response_error

__all__ = ["ListRegressionResult", "list_regression"]


class _Likelihood:
    """Observed-data log-likelihood and score of the standard design."""

    def __init__(
        self,
        y: NDArray[np.float64],
        t: NDArray[np.bool_],
        x: NDArray[np.float64],
        j: int,
        constrained: bool,
        weights: NDArray[np.float64] | None = None,
    ):
        self.y, self.t, self.x, self.j, self.constrained = y, t, x, j, constrained
        self.k = x.shape[1]
        self.weights = weights  # how many respondents a row stands for (None: one each)

    def split(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        k = self.k
        delta = theta[:k]
        psi0 = theta[k : 2 * k]
        psi1 = psi0 if self.constrained else theta[2 * k : 3 * k]
        return delta, psi0, psi1

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        ll, score = self.rows(theta, self.y)
        if self.weights is None:
            return float(ll.sum()), score.sum(axis=0)
        return float(self.weights @ ll), self.weights @ score

    def collapsed(self) -> _Likelihood:
        """The same likelihood over the distinct rows (covariates, treatment, count),
        each weighted by how many respondents share it: its value, score and
        information are the same sums (an intercept-only fit of 100,000 counts has
        2 (J + 2) distinct rows, and took 9 s); ``self`` where under half the rows
        repeat."""
        rows = np.column_stack([self.x, self.t, self.y])
        distinct, counts = np.unique(rows, axis=0, return_counts=True)
        if self.weights is not None or 2 * len(distinct) > len(rows):
            return self
        k = self.k
        return _Likelihood(distinct[:, k + 1], distinct[:, k].astype(bool), distinct[:, :k],
                           self.j, self.constrained, counts.astype(np.float64))  # fmt: skip

    def rows(
        self, theta: NDArray[np.float64], y: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each row's log-likelihood of the count ``y`` (shape (n,); -inf where the
        count is impossible) and its score (shape (n, parameters); 0 there)."""
        delta, psi0, psi1 = self.split(theta)
        x, t, j = self.x, self.t, self.j
        e_d, e0, e1 = x @ delta, x @ psi0, x @ psi1
        log_g, log_1g = -np.logaddexp(0, -e_d), -np.logaddexp(0, e_d)
        # the count of control items under Z = 1 and Z = 0
        a = np.where(t, y - 1, y)
        la = log_g + log_binomial(a, j, e1)
        lb = log_1g + log_binomial(y, j, e0)
        if self.constrained:  # control rows: the binomial alone
            la = np.where(t, la, -np.inf)
            lb = np.where(t, lb, log_binomial(y, j, e0))
        ll = np.logaddexp(la, lb)
        possible = np.isfinite(ll)
        w = np.exp(la - np.where(possible, ll, 0.0))  # posterior P(Z = 1 | count)
        g = np.exp(log_g)
        p0, p1 = special.expit(e0), special.expit(e1)
        s_delta = (w - g) if not self.constrained else np.where(t, w - g, 0.0)
        s0 = (1 - w) * (y - j * p0)
        s1 = w * (a - j * p1)
        parts = [s_delta, s0 + s1] if self.constrained else [s_delta, s0, s1]
        score = np.concatenate([x * np.where(possible, s, 0.0)[:, None] for s in parts], axis=1)
        return ll, score


def _through(base: _Likelihood, channel: Any, refused: bool) -> ChannelLikelihood:
    """The likelihood of ``base``'s counts as stored through ``channel`` (a design over
    the counts ``0..J+1``).

    Raises
    ------
    ValueError
        For an error model or overdispersion (``refused``), which does not take a
        channel yet, or a channel of another size.
    """
    if refused:
        raise ValueError(
            "channel: an error model and overdispersion do not take counts stored through "
            "a channel yet; the standard design (constrained or not) and the ceiling and "
            "floor liars do"
        )
    n = len(base.y)
    return ChannelLikelihood(
        lambda theta, c: base.rows(theta, np.full(n, float(c))),
        base.y,
        channel_matrix(channel, base.j),
        weights=base.weights,
    )


def _fit(
    lik: _Likelihood | ChannelLikelihood, start: NDArray[np.float64], max_iter: int
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]]:
    """The maximum of ``lik`` from ``start``: ``(theta, log-likelihood, score,
    covariance)``, the covariance the inverse observed information."""
    theta = maximise_score(lik.value_and_score, start, max_iter)
    ll, score = lik.value_and_score(theta)
    information = -score_hessian(lik.value_and_score, theta)
    return theta, ll, score, inverse_information(information, "the observed information")


def _start(lik: _Likelihood) -> NDArray[np.float64]:
    """Logistic-binomial fit of the control counts for psi; delta's intercept from
    the difference in means, other slopes 0."""
    x, t, j = lik.x, lik.t, lik.j
    y = np.minimum(lik.y, np.where(t, j + 1, j))  # a channel may move a count past its list
    xc, yc = x[~t], y[~t]

    def nll(psi: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = xc @ psi
        return -float(log_binomial(yc, j, eta).sum()), -(xc.T @ (yc - j * special.expit(eta)))

    psi = optimize.minimize(nll, np.zeros(lik.k), jac=True, method="BFGS").x
    diff = float(np.clip(y[t].mean() - yc.mean(), 0.02, 0.98))
    delta = np.zeros(lik.k)
    delta[0] = special.logit(diff)
    return np.concatenate([delta, psi] + ([] if lik.constrained else [psi]))


def list_frame(
    formula: str, data: pd.DataFrame, treat: str, items: int, channelled: bool = False
) -> tuple[Any, NDArray[np.float64], NDArray[np.bool_], int]:
    """The model frame of ``formula`` with the counts, the treated rows and ``J``
    checked (:func:`check_list_counts`; ``channelled``: every count in 0..J+1); a
    ``treat`` that is no column is named."""
    if treat not in data.columns:
        raise ValueError(
            f"treat must name a column of data; columns: {', '.join(map(str, data.columns))}"
        )
    frame = model_frame(formula, data)
    t_raw = data.loc[frame.rows, treat].to_numpy()
    y, t, j = check_list_counts(
        frame.y, t_raw.astype(np.float64) if t_raw.dtype == bool else t_raw, items, channelled
    )
    return frame, y, t, j


def _extended(
    frame: Any,
    data: pd.DataFrame,
    counts: tuple[NDArray[np.float64], NDArray[np.bool_], int],
    constrained: bool,
    model: tuple[bool | str, bool | str, LiarPrior, str, bool],
    start: NDArray[np.float64],
    max_iter: int,
    channel: Any = None,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64], list[str]]:
    """The constrained model extended by liars, a response error or overdispersion, from
    its fit ``start`` (through ``channel``, liars only): ``(theta, log-likelihood, score,
    covariance, the added coefficients' names)``."""
    ceiling, floor, liar_prior, error, overdispersed = model
    liars = ceiling is not False or floor is not False
    if error not in ("none", *ERRORS):
        raise ValueError(f"error must be 'none', 'topcode' or 'uniform', got {error!r}")
    if liars + (error != "none") + bool(overdispersed) > 1 or (
        not constrained and not overdispersed
    ):
        raise ValueError(
            "ceiling and floor liars and a response error need constrained=True (Blair & "
            "Imai 2012); these and overdispersion one at a time"
        )
    if overdispersed:
        y, t, j = counts
        fit = fit_overdispersed if constrained else fit_unconstrained
        return fit(y, t, frame.X, j, start, max_iter)
    if error != "none":
        y, t, j = counts
        return (*fit_response_error(y, t, frame.X, j, error, start, max_iter), ERRORS[error])
    matrix = None if channel is None else channel_matrix(channel, counts[2])
    return fit_liars(frame, data, counts, (ceiling, floor), liar_prior, start, max_iter, matrix)


@dataclass(frozen=True)
class ListRegressionResult(ListFit):
    """A fitted list-experiment regression, on the common base (:class:`ListFit`:
    ``params``, ``bse``, ``cov_params()``, ``conf_int()``, ``summary()``,
    ``to_frame()``, ``to_dict()``).

    Attributes
    ----------
    params : pandas.Series
        Coefficients labelled ``sensitive.<term>`` (``delta``), ``control.<term>``
        (constrained) or ``control.psi0.<term>`` and ``control.psi1.<term>``; then
        ``floor.<term>`` and ``ceiling.<term>`` for a liar model (log-odds of lying).
    covariance : numpy.ndarray of float64, shape (k, k)
        The inverse observed information (``bse`` its diagonal's square roots, NaN
        where negative).
    llf : float
        The log-likelihood at the estimate (the maximum; with a prior on the liars, its
        value at the posterior mode).
    prevalence : float
        Mean over the rows of ``g(x'delta)``: the estimated prevalence of the item.
    prevalence_se : float
        Its delta-method standard error (covariates held at the sample).
    n : int
    items : int
    converged : bool
        The score's largest entry is below 1e-6 at the estimate.
    constrained : bool
    spec : formulaic.ModelSpec or None
        The formula's right-hand side, to build new rows' covariates
        (:meth:`predicted_prevalence`).
    linear : bool
        The sensitive model is linear (``list_least_squares(method="lm")``), not
        logistic.
    fitted : numpy.ndarray or None
        The fitted rows' covariates, shape (n, terms), float64, for simulations over
        them (:func:`social_desirability_bias`).

    Examples
    --------
    >>> from deniable.data import list_example
    >>> data = list_example().data  # y (a count of 0..4), x, treat
    >>> fit = list_regression("y ~ x", data, treat="treat", items=3)
    >>> fit.params.round(2).tolist()
    [-0.87, 1.23, 0.06, -0.06]
    >>> round(fit.prevalence, 3), round(fit.prevalence_se, 3)
    (0.342, 0.034)
    """

    llf: float
    prevalence: float
    prevalence_se: float
    constrained: bool
    spec: Any = None
    linear: bool = False
    fitted: Any = field(default=None, repr=False, compare=False)

    TITLE = "List-experiment regression (Imai 2011)"

    def _summary_lines(self) -> list[str]:
        model = "linear" if self.linear else "constrained" if self.constrained else "unconstrained"
        return [
            f"Model: {model}   Log-likelihood: {self.llf:.4f}",
            f"Prevalence: {self.prevalence:.4f} (SE {self.prevalence_se:.4f})",
        ]

    def _dict_fields(self) -> dict[str, Any]:
        return {
            "llf": self.llf,
            "prevalence": self.prevalence,
            "prevalence_se": self.prevalence_se,
            "constrained": self.constrained,
            "linear": self.linear,
        }

    def predicted_prevalence(
        self, data: pd.DataFrame | None = None, *, versus: pd.DataFrame | None = None
    ) -> PredictedPrevalence:
        """The sensitive item's prevalence averaged over the rows of ``data`` (default:
        the fitted rows, as :attr:`prevalence`), ``mean_i g(x_i'delta)`` (``x_i'delta``
        for a linear fit), with its delta-method standard error; with ``versus``, the
        difference of that average over ``data`` and over ``versus`` (for example the
        same people with ``south`` set to 1 and to 0: Imai 2011, Figure 1). R's
        ``predict.ictreg(avg = TRUE, se.fit = TRUE, newdata.diff = ...)``, which
        requires the two frames to have as many rows; here they may differ.

        Returns
        -------
        PredictedPrevalence
            With ``versus``, its ``difference`` is set: the interval is Wald's, plain.

        Raises
        ------
        ValueError
            If the fit cannot build new rows (no formula kept), ``data`` lacks a
            covariate or has no complete row, or ``versus`` is given without ``data``.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(2)
        >>> n = 3000
        >>> t, south = rng.integers(0, 2, n), rng.integers(0, 2, n)
        >>> z = rng.random(n) < np.where(south == 1, 0.4, 0.1)
        >>> data = pd.DataFrame({"y": rng.binomial(3, 0.5, n) + t * z, "south": south,
        ...                      "treat": t})
        >>> fit = list_regression("y ~ south", data, treat="treat", items=3)
        >>> gap = fit.predicted_prevalence(data.assign(south=1),
        ...                                versus=data.assign(south=0))
        >>> round(gap.estimate, 2), round(gap.std_error, 2)
        (0.31, 0.05)
        """
        if data is None:
            if versus is not None:
                raise ValueError("versus needs data: the rows to compare it with")
            return PredictedPrevalence(self.prevalence, self.prevalence_se)
        width = sum(1 for name in self.params.index if name.startswith("sensitive."))
        rows = (
            prediction_rows(self.spec, data),
            None if versus is None else prediction_rows(self.spec, versus),
        )
        delta = np.asarray(self.params, dtype=np.float64)[:width]
        cov = self.covariance[:width, :width]
        return delta_prevalence(rows, delta, cov, self.linear)


def list_regression(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    constrained: bool = True,
    ceiling: bool | str = False,
    floor: bool | str = False,
    liar_prior: LiarPrior = None,
    error: Literal["none", "topcode", "uniform"] = "none",
    overdispersed: bool = False,
    max_iter: int = 50,
    channel: Any = None,
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
    ceiling, floor : bool or str, default False
        Model the ceiling or floor liars (Blair & Imai 2012, :mod:`._liars`): True for a
        share the same for everyone, or the right-hand side of a formula (``"~ age +
        male"``) for a logistic model of it. Only with ``constrained=True``.
    liar_prior : {None, "cauchy", "list_package"}, default None
        None: maximum likelihood. ``"cauchy"``: the posterior mode under Cauchy(0, 10) on
        the liars' intercepts and Cauchy(0, 2.5) on their slopes (Gelman et al. 2008),
        with the log posterior's information. ``"list_package"``: R's ``ceiling.fit =
        "bayesglm"`` fit and standard errors (:mod:`._liars`, docs/analysis.md).
    error : {"none", "topcode", "uniform"}, default "none"
        A share of respondents answer the list's largest count (``"topcode"``) or a
        count drawn uniformly (``"uniform"``, a share a list) whatever their items
        (Blair, Imai & Chou 2018; :mod:`._response_error`): coefficients
        ``error.log_odds`` or ``error.log_odds_control`` and ``_treated``.
    overdispersed : bool, default False
        The control count beta-binomial (Imai 2011; :mod:`._overdispersed`):
        ``control.overdispersion``, the logit of the intra-person correlation; with
        ``constrained=False``, one for each value of the sensitive answer
        (``control.psi0.overdispersion``, ``control.psi1.overdispersion``), one held at
        the boundary (the binomial) with a NaN standard error and a warning where the
        maximum puts it there. Without liars or an error.
    max_iter : int, default 50
        Newton steps at most after BFGS.
    channel : Design, optional
        A known channel the counts went through before they were stored (the server's
        post-randomization of a list count, :class:`~deniable.mechanisms.GeometricCount`
        over ``0..J+1`` in both groups): the likelihood sums each stored value over the
        counts it may come from (:mod:`._channel`): the standard design, constrained or
        not, and the ceiling and floor liars (``liar_prior`` None or ``"cauchy"``); not
        an error model or overdispersion.

    Returns
    -------
    ListRegressionResult
        Coefficients, observed-information standard errors, log-likelihood and the
        estimated prevalence.

    Raises
    ------
    ValueError
        On a malformed formula, column or report (see :func:`check_list_counts`), data
        that identify no model (its information singular, named), or a channel with an
        error model, overdispersion or ``liar_prior="list_package"``.

    Examples
    --------
    See :class:`ListRegressionResult`. On R's ``race`` data, ``"y ~ south + age +
    male + college"`` with ``items=3`` reproduces Imai (2011, Table 1, columns 5-6).
    """
    extended = error != "none" or ceiling is not False or floor is not False or overdispersed
    frame, y, t, j = list_frame(formula, data, treat, items, channel is not None)
    base = _Likelihood(y, t, frame.X, j, constrained)
    refused = error != "none" or bool(overdispersed)
    distinct = base.collapsed()  # the fit's sums over distinct rows; the rest per row
    lik = distinct if channel is None else _through(distinct, channel, refused)
    theta, ll, score, cov = _fit(lik, _start(base), max_iter)
    parts = (
        ("sensitive", "control") if constrained else ("sensitive", "control.psi0", "control.psi1")
    )
    names = [f"{part}.{s}" for part in parts for s in frame.terms]
    model = (ceiling, floor, liar_prior, error, overdispersed)
    if extended:
        theta, ll, score, cov, more = _extended(
            frame, data, (y, t, j), constrained, model, theta, max_iter, channel
        )
        names += more
    return _result(frame, j, (theta, ll, score, cov), names, constrained)


def _result(
    frame: Any,
    j: int,
    fit: tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]],
    names: list[str],
    constrained: bool,
) -> ListRegressionResult:
    """The result of a fit ``(theta, log-likelihood, score, covariance)``, the sensitive
    coefficients first."""
    theta, ll, score, cov = fit
    k = frame.X.shape[1]
    g = special.expit(frame.X @ theta[:k])
    grad = (g * (1 - g)) @ frame.X / len(g)
    return ListRegressionResult(
        params=pd.Series(theta, index=names),
        covariance=np.asarray(cov, dtype=np.float64),
        llf=ll,
        prevalence=float(g.mean()),
        prevalence_se=math.sqrt(float(grad @ cov[:k, :k] @ grad)),
        n=len(g),
        items=j,
        constrained=constrained,
        converged=bool(np.abs(score).max() < 1e-6),
        spec=frame.spec,
        fitted=frame.X,
    )
