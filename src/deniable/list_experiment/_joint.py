"""The list experiment's sensitive answer as an explanatory variable of an outcome
(Imai, Park & Greene 2015; R's ``list::ictreg.joint``).

The list model of :mod:`._item_count_ml` (the sensitive answer ``Z ~ Bernoulli(g(x'delta))``,
the control count ``Y(0) | Z = z ~ Binomial(J, g(x'psi + psi_z z))``, ``g`` the logistic
function) is joined by an outcome ``V`` observed for every respondent, treated or not:
``"logistic"``, ``V | Z = z ~ Bernoulli(g(x'beta + beta_y Y(0) + gamma z))``, or
``"linear"``, ``V | Z = z ~ Normal(x'beta + beta_y Y(0) + gamma z, sigma^2)``. *Constrained*
(the default): ``psi_z = 0`` and ``beta_y = 0``. ``gamma`` is the sensitive answer's
effect on the outcome, estimated without anyone's answer being known: a row's
likelihood sums over ``z in {0, 1}``,

``P(y, v) = sum_z P(Z = z) Bin(y - T z; J, h_z) f(v | z, y - T z)``,

(a count out of ``0..J`` has probability 0), and the log-likelihood is maximised directly
with its analytic score (R runs EM). Standard errors come from the observed
information by default; ``information="outer_product"`` gives R's (the inverse of the
scores' outer product, Berndt, Hall, Hall & Hausman 1974).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from .._fitting import PredictedPrevalence, inverse_information, maximise_score, score_hessian
from .._validation import check_confidence_level, renamed_keywords
from ._item_count import refuse_channel
from ._item_count_ml import list_frame
from ._liars import log_binomial
from ._list_fit import ListFit
from ._prediction import (
    answer_table,
    check_simulation,
    delta_prevalence,
    prediction_rows,
)

__all__ = ["JointListResult", "list_joint_regression"]

Outcome = Literal["logistic", "linear"]


@dataclass(frozen=True)
class _Joint:
    y: NDArray[np.float64]
    t: NDArray[np.bool_]
    x: NDArray[np.float64]
    v: NDArray[np.float64]
    j: int
    outcome: str
    constrained: bool

    @property
    def widths(self) -> tuple[int, int, int]:
        """Coefficients of the control, sensitive and outcome models."""
        k = self.x.shape[1]
        extra = 0 if self.constrained else 1
        return k + extra, k, k + extra + 1

    @property
    def size(self) -> int:
        return sum(self.widths) + (self.outcome == "linear")

    def components(
        self, theta: NDArray[np.float64]
    ) -> tuple[list[NDArray[np.float64]], list[tuple[Any, ...]]]:
        """Per ``z``: the log of each row's joint term, and the derivatives of it in the
        control, sensitive and outcome linear predictors (and in ``log sigma``), with
        each model's design rows."""
        c, s, _ = self.widths
        x, y, t, v, j = self.x, self.y, self.t, self.v, self.j
        psi, delta = theta[:c], theta[c : c + s]
        beta = theta[c + s : c + s + self.widths[2]]
        e_d = x @ delta
        logs, pieces = [], []
        for z in (0, 1):
            y0 = y - t * z
            xh = x if self.constrained else np.column_stack([x, np.full(len(y), float(z))])
            zs = np.full(len(y), float(z))
            xf = np.column_stack([x, zs] if self.constrained else [x, y0, zs])
            e_h, e_f = xh @ psi, xf @ beta
            inside = (y0 >= 0) & (y0 <= j)
            y0c = np.clip(y0, 0, j)
            lg = -np.logaddexp(0, -e_d) if z else -np.logaddexp(0, e_d)
            lb = np.where(inside, log_binomial(y0c, j, e_h), -np.inf)
            if self.outcome == "logistic":
                lf = v * -np.logaddexp(0, -e_f) + (1 - v) * -np.logaddexp(0, e_f)
                d_f = v - special.expit(e_f)
                d_sigma = np.zeros(len(y))
            else:
                log_sigma = theta[-1]
                r = (v - e_f) * math.exp(-log_sigma)
                lf = -log_sigma - 0.5 * math.log(2 * math.pi) - 0.5 * r**2
                d_f = r * math.exp(-log_sigma)
                d_sigma = r**2 - 1
            logs.append(lg + lb + lf)
            d_g = z - special.expit(e_d)
            d_h = y0c - j * special.expit(e_h)
            pieces.append((d_h, xh, d_g, d_f, xf, d_sigma))
        return logs, pieces

    def scores(self, theta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each row's log-likelihood, shape (n,), and score, shape (n, size)."""
        logs, pieces = self.components(theta)
        ll = np.logaddexp(logs[0], logs[1])
        rows = np.zeros((len(self.y), self.size))
        c, s, f = self.widths
        for z in (0, 1):
            w = np.exp(logs[z] - ll)
            d_h, xh, d_g, d_f, xf, d_sigma = pieces[z]
            rows[:, :c] += (w * d_h)[:, None] * xh
            rows[:, c : c + s] += (w * d_g)[:, None] * self.x
            rows[:, c + s : c + s + f] += (w * d_f)[:, None] * xf
            if self.outcome == "linear":
                rows[:, -1] += w * d_sigma
        return ll, rows

    def value_and_score(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        ll, rows = self.scores(theta)
        return float(ll.sum()), rows.sum(axis=0)


def _start(m: _Joint) -> NDArray[np.float64]:
    """The control model fitted on the control rows, the sensitive intercept from the
    difference in means, the outcome model fitted without ``z`` (``gamma = 0``)."""
    x, y, t, j, v = m.x, m.y, m.t, m.j, m.v
    c, s, f = m.widths

    def nll(psi: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        eta = x[~t] @ psi
        return -float(log_binomial(y[~t], j, eta).sum()), -(
            x[~t].T @ (y[~t] - j * special.expit(eta))
        )

    psi = np.zeros(c)
    psi[: x.shape[1]] = optimize.minimize(nll, np.zeros(x.shape[1]), jac=True, method="BFGS").x
    delta = np.zeros(s)
    delta[0] = special.logit(float(np.clip(y[t].mean() - y[~t].mean(), 0.02, 0.98)))
    beta = np.zeros(f)
    k = x.shape[1]
    if m.outcome == "logistic":

        def nll_v(b: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            e = x @ b
            value = -float((v * e - np.logaddexp(0, e)).sum())
            return value, -(x.T @ (v - special.expit(e)))

        beta[:k] = optimize.minimize(nll_v, np.zeros(k), jac=True, method="BFGS").x
        return np.concatenate([psi, delta, beta])
    coef, *_ = np.linalg.lstsq(x, v, rcond=None)
    beta[:k] = coef
    sigma = float(np.std(v - x @ coef))
    return np.concatenate([psi, delta, beta, [math.log(max(sigma, 1e-8))]])


def _check_choices(outcome_model: object, information: object) -> None:
    """Raise ``ValueError`` naming an unknown ``outcome_model`` or ``information``."""
    if outcome_model not in ("logistic", "linear"):
        raise ValueError(f"outcome_model must be 'logistic' or 'linear', got {outcome_model!r}")
    if information not in ("observed", "outer_product"):
        raise ValueError(f"information must be 'observed' or 'outer_product', got {information!r}")


def _outcome_column(data: pd.DataFrame, rows: Any, outcome: str, model: str) -> NDArray[np.float64]:
    """The outcome on the model frame's rows, checked: 0/1 (logistic) or finite."""
    if outcome not in data.columns:
        raise ValueError(
            f"outcome must name a column of data; columns: {', '.join(map(str, data.columns))}"
        )
    raw = pd.to_numeric(data.loc[rows, outcome], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(raw) if model == "linear" else ~np.isin(raw, (0.0, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        allowed = "a finite number" if model == "linear" else "0 or 1"
        raise ValueError(f"outcome {outcome!r} must be {allowed} on every row; row {i} is not")
    return np.asarray(raw, dtype=np.float64)


def _names(terms: list[str], constrained: bool, model: str) -> list[str]:
    """The coefficients' names in ``params`` order."""
    names = [f"control.{s}" for s in terms] + ([] if constrained else ["control.z"])
    names += [f"sensitive.{s}" for s in terms]
    names += [f"outcome.{s}" for s in terms] + ([] if constrained else ["outcome.y0"])
    return [*names, "outcome.z", *(["sigma"] if model == "linear" else [])]


def _given_start(m: _Joint, start: ArrayLike | None) -> NDArray[np.float64]:
    """``start`` checked and put in the fit's terms (``log sigma``), or :func:`_start`."""
    if start is None:
        return _start(m)
    given = np.asarray(start, dtype=np.float64).ravel()
    if given.size != m.size or not np.isfinite(given).all():
        raise ValueError(f"start must hold {m.size} finite numbers, got {given.size}")
    if m.outcome == "linear":
        if given[-1] <= 0:
            raise ValueError(f"start's last entry, sigma, must be > 0, got {given[-1]}")
        given = given.copy()
        given[-1] = math.log(given[-1])
    return given


@dataclass(frozen=True)
class JointListResult(ListFit):
    """A list experiment's sensitive answer as an explanatory variable of an outcome, on
    the common base (:class:`ListFit`).

    Attributes
    ----------
    params : pandas.Series
        ``control.<term>`` (and ``control.z``, unconstrained), ``sensitive.<term>``,
        ``outcome.<term>`` (and ``outcome.y0``, unconstrained) and ``outcome.z``, the
        sensitive answer's effect (``gamma``: log-odds for ``"logistic"``, the outcome's
        units for ``"linear"``); then ``sigma`` for ``"linear"``.
    covariance : numpy.ndarray of float64, shape (k, k)
        The inverse of the ``information`` asked (``bse`` its diagonal's square roots,
        NaN where negative: a fit at a boundary).
    llf : float
        The log-likelihood at the maximum.
    prevalence : float
        Mean over the rows of ``g(x'delta)``.
    n : int
    items : int
    converged : bool
        The score's largest entry is below 1e-6 at the estimate.
    outcome : str
    constrained : bool
    information : str
    spec : formulaic.ModelSpec or None
        The formula's right-hand side, to build new rows' covariates.
    fitted : tuple of ndarray or None
        The fitted rows' covariates (n, terms), counts (n,) and treated flags (n,), for
        the predictions on them.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(4)
    >>> n = 4000
    >>> t = rng.integers(0, 2, n)
    >>> x = rng.normal(size=n)
    >>> z = rng.random(n) < 1 / (1 + np.exp(0.5 - x))
    >>> v = rng.random(n) < 1 / (1 + np.exp(-(0.3 * x - 1.0 * z)))
    >>> data = pd.DataFrame({"y": rng.binomial(3, 0.4, n) + t * z, "x": x, "treat": t,
    ...                      "v": v.astype(int)})
    >>> fit = list_joint_regression("y ~ x", data, treat="treat", items=3, outcome="v")
    >>> round(float(fit.params["outcome.z"]), 2), round(float(fit.bse["outcome.z"]), 2)
    (-0.88, 0.21)
    """

    llf: float
    prevalence: float
    outcome: str
    constrained: bool
    information: str
    spec: Any = None
    fitted: Any = field(default=None, repr=False, compare=False)

    TITLE = "List experiment with an outcome (Imai, Park & Greene 2015)"

    def _summary_lines(self) -> list[str]:
        model = "constrained" if self.constrained else "unconstrained"
        return [
            f"Outcome: {self.outcome}   Model: {model}   information: {self.information}",
            f"Log-likelihood: {self.llf:.4f}   Prevalence: {self.prevalence:.4f}",
        ]

    def _dict_fields(self) -> dict[str, Any]:
        return {
            "llf": self.llf,
            "prevalence": self.prevalence,
            "outcome": self.outcome,
            "constrained": self.constrained,
            "information": self.information,
        }

    @property
    def _blocks(self) -> tuple[slice, slice]:
        """Where the sensitive and the outcome coefficients sit in ``params``."""
        k = sum(1 for name in self.params.index if name.startswith("sensitive."))
        c = k + (0 if self.constrained else 1)
        return slice(c, c + k), slice(c + k, 2 * c + k + 1)

    def _rows(self, data: pd.DataFrame | None) -> NDArray[np.float64]:
        if data is None:
            if self.fitted is None:
                raise ValueError("this fit kept no rows: give data to predict on")
            return np.asarray(self.fitted[0])
        return prediction_rows(self.spec, data)

    def predicted_prevalence(
        self, data: pd.DataFrame | None = None, *, versus: pd.DataFrame | None = None
    ) -> PredictedPrevalence:
        """The sensitive item's prevalence averaged over the rows of ``data`` (default:
        the fitted rows, as :attr:`prevalence`), with its delta-method standard error;
        with ``versus``, the difference of the averages over ``data`` and over
        ``versus`` (:meth:`ListRegressionResult.predicted_prevalence`). R's
        ``predict.ictreg.joint(predict.sensitive = TRUE)`` gives the mean of simulated
        averages instead (:mod:`._prediction`).

        Returns
        -------
        PredictedPrevalence

        Raises
        ------
        ValueError
            If ``data`` lacks a covariate or has no complete row, or ``versus`` is
            given without ``data``.
        """
        if versus is not None and data is None:
            raise ValueError("versus needs data: the rows to compare it with")
        sens = self._blocks[0]
        rows = (self._rows(data), None if versus is None else self._rows(versus))
        cov = self.covariance[sens, sens]
        delta = np.asarray(self.params, dtype=np.float64)[sens]
        return delta_prevalence(rows, delta, cov, linear=False)

    @renamed_keywords(level="confidence_level", seed="rng")
    def predicted_outcome(
        self,
        data: pd.DataFrame | None = None,
        *,
        confidence_level: float = 0.95,
        method: Literal["delta", "simulation"] = "delta",
        draws: int = 10_000,
        rng: np.random.Generator | int | None = None,
    ) -> pd.DataFrame:
        """The outcome averaged over the rows of ``data`` (default: the fitted rows) with
        the sensitive answer set to 0 for everyone, and to 1, and the difference (Imai,
        Park & Greene 2015, Figure 2: the turnout of vote sellers and of the others).
        R's ``predict.ictreg.joint(avg = TRUE, sensitive.value = "both",
        sensitive.diff = TRUE)``.

        Parameters
        ----------
        data : pandas.DataFrame, optional
            Rows holding the formula's covariates. Not with ``constrained=False``: that
            outcome model takes each row's control count ``Y(0)``, known on the fitted
            rows only (there ``y`` for 0, ``y - treat`` for 1, as R).
        confidence_level : float in (0, 1), default 0.95
        method : {"delta", "simulation"}, default "delta"
            The delta method, or R's simulation from the estimate's normal law with the
            draws shared by both values of the answer (:mod:`._prediction`).
        draws : int in 2..10,000,000, default 10,000
            Simulation draws (R's 10,000).
        rng : numpy.random.Generator or int, optional
            The simulation's generator or seed (a simulation draws no respondent's
            randomness).

        Returns
        -------
        pandas.DataFrame
            Rows ``"sensitive = 0"``, ``"sensitive = 1"`` and ``"difference"`` (1 minus
            0); columns ``estimate``, ``std_error``, ``lower``, ``upper``: the outcome's
            probability (``"logistic"``, its Wald interval on the logit scale) or mean
            (``"linear"``); simulation intervals are the draws' quantiles.

        Raises
        ------
        ValueError
            On a ``confidence_level`` outside (0, 1), an unknown ``method``, ``draws`` out of
            range, ``data`` with ``constrained=False``, or ``data`` lacking a covariate.
        """
        check_simulation(method, draws)
        level = check_confidence_level(confidence_level)
        if data is not None and not self.constrained:
            raise ValueError(
                "data: the unconstrained outcome model takes each row's control count "
                "Y(0), known on the fitted rows only; predict on them (data=None)"
            )
        x = self._rows(data)
        designs = []
        for z in (0, 1):
            extra = [] if self.constrained else [self.fitted[1] - z * self.fitted[2]]
            designs.append(np.column_stack([x, *extra, np.full(len(x), float(z))]))
        out = np.asarray(self.params, dtype=np.float64)[self._blocks[1]]
        cov = self.covariance[self._blocks[1], self._blocks[1]]
        model = (out, cov, self.outcome == "linear")
        return answer_table(designs, model, level, method, (draws, rng))


def _estimates(
    model: Any, theta: NDArray[np.float64], information: str, outcome_model: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The reported coefficients and their covariance at the maximum ``theta``: the
    inverse observed information or the scores' outer product; a linear outcome's sigma
    reported, not its log (delta method)."""
    rows = model.scores(theta)[1]
    cov = (
        inverse_information(-score_hessian(model.value_and_score, theta), "the information")
        if information == "observed"
        else inverse_information(rows.T @ rows, "the scores' outer product")
    )
    params = theta.copy()
    if outcome_model == "linear":
        params[-1] = math.exp(theta[-1])
        scale = np.ones(theta.size)
        scale[-1] = params[-1]
        cov = cov * np.outer(scale, scale)
    return params, cov


def list_joint_regression(
    formula: str,
    data: pd.DataFrame,
    *,
    treat: str,
    items: int,
    outcome: str,
    outcome_model: Outcome = "logistic",
    constrained: bool = True,
    information: Literal["observed", "outer_product"] = "observed",
    start: ArrayLike | None = None,
    max_iter: int = 50,
    channel: Any = None,
) -> JointListResult:
    """Regress an outcome on a list experiment's sensitive answer and covariates, the
    answer never known for anyone (Imai, Park & Greene 2015; module text).

    Parameters
    ----------
    formula : str
        ``"count ~ covariates"`` (Wilkinson formula): the covariates of the control, the
        sensitive and the outcome model.
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
    treat : str
        Column: 1 where the list held the sensitive item, 0 otherwise.
    items : int in 1..50
        ``J``, the number of control items.
    outcome : str
        Column of the outcome: 0/1 for ``"logistic"``, a finite number for ``"linear"``.
    outcome_model : {"logistic", "linear"}, default "logistic"
    constrained : bool, default True
        ``psi_z = 0`` and ``beta_y = 0`` (module text); False frees both.
    information : {"observed", "outer_product"}, default "observed"
        The observed information (the log-likelihood's Hessian), or the scores' outer
        product (R's).
    start : array_like of float, optional
        Where the maximisation starts, in the order of ``params`` (``sigma`` > 0 last for
        ``"linear"``). The likelihood can have several local maxima, and on small samples
        rise towards a boundary where a sensitive coefficient runs off (docs/analysis.md):
        compare the fits from more than one start. Default: the control model fitted on
        the control rows, the sensitive intercept from the difference in means and the
        outcome model without the sensitive answer.
    max_iter : int, default 50
        Newton steps at most after BFGS.
    channel : Design, optional
        Counts stored through a channel (the server's post-randomization of a list
        count): refused, as this model does not take a channel yet (ValueError naming
        it); :func:`list_regression` and :func:`list_difference_in_means` do.

    Returns
    -------
    JointListResult

    Raises
    ------
    ValueError
        On a malformed formula, column or report (see :func:`check_list_counts`), an
        ``outcome`` that is no column, is missing on a used row, or (logistic) holds
        other than 0 and 1, an unknown ``outcome_model`` or ``information``, or a
        ``start`` of the wrong length, not finite, or with ``sigma <= 0``, or data that
        identify no model (its information singular, named).

    Examples
    --------
    See :class:`JointListResult`; on R's ``mexico`` data it reproduces Imai, Park &
    Greene (2015, Tables 4 and 5; docs/analysis.md).
    """
    refuse_channel("list_joint_regression", channel)
    _check_choices(outcome_model, information)
    frame, y, t, j = list_frame(formula, data, treat, items)
    raw = _outcome_column(data, frame.rows, outcome, outcome_model)
    model = _Joint(y, t, frame.X, raw, j, outcome_model, constrained)
    theta = maximise_score(model.value_and_score, _given_start(model, start), max_iter)
    ll, score = model.value_and_score(theta)
    params, cov = _estimates(model, theta, information, outcome_model)
    names = _names(list(frame.terms), constrained, outcome_model)
    k = frame.X.shape[1]
    c = k + (0 if constrained else 1)
    g = special.expit(frame.X @ theta[c : c + k])
    return JointListResult(
        params=pd.Series(params, index=names),
        covariance=np.asarray(cov, dtype=np.float64),
        llf=ll,
        prevalence=float(g.mean()),
        n=len(y),
        items=j,
        outcome=outcome_model,
        constrained=constrained,
        information=information,
        converged=bool(np.abs(score).max() < 1e-6),
        spec=frame.spec,
        fitted=(frame.X, y, t.astype(np.float64)),
    )
