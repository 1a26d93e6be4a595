"""Logistic regression of a randomized answer on covariates collected in the clear.

The trait ``Z`` of respondent ``i`` follows ``Pr(Z = 1 | x) = sigmoid(x beta)``; only the
report ``R`` is seen, through the design: ``Pr(R = r | x) = P[r, no] + (P[r, yes] -
P[r, no]) sigmoid(x beta)`` (Maddala 1983; Scheers & Dayton 1988; van der Heijden & van
Gils 1996). :func:`rr_logit` maximises this likelihood (the model of R's
``rr::rrreg``, Blair, Imai & Zhou 2015, and ``RRreg::RRlog``, Heck & Moshagen 2018),
including designs with several randomization groups and unknown parameters (the
cheating-detection model and the stochastic lie detector), where the unknown
parameters are estimated jointly with ``beta``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import expit

from .._fitting import (
    CoefficientsMixin,
    PredictedPrevalence,
    Profile,
    TestResult,
    coefficient_table,
    model_frame,
    normal_only,
    observed_covariance,
)
from .._validation import JSON
from ..estimation import Summary
from ..mechanisms import Design
from ._group_channels import GroupModel, as_channel
from ._likelihood import (
    expected_information,
    fit,
    negative_loglik,
    row_posteriors,
    scores,
    start_beta,
)

__all__ = [
    "GRID_FRACTIONS",
    "INFORMATION",
    "RANDOM_STARTS",
    "RRLogitResult",
    "fit_result",
    "report_codes",
    "rr_logit",
]

_Array = NDArray[np.float64]


#: How each ``information`` choice is said in the summary.
_INFORMATION_TEXT = {
    "observed": "observed information (the Hessian at the estimate)",
    "expected": "expected (Fisher) information at the estimate, as GLMMRR",
    "opg": "outer product of the scores",
}


@dataclass(frozen=True)
class RRLogitResult(CoefficientsMixin):
    """A fitted randomized-response logistic regression (statsmodels-style names).

    Attributes
    ----------
    params : pandas.Series
        Coefficients indexed by term (``Intercept``, covariates), then the channel's
        unknown parameters (``t`` of the stochastic lie detector, ``gamma`` of the
        cheating-detection model, ``alpha`` of the unrelated question), if any.
    covariance : ndarray, shape (p + q, p + q)
        Inverse observed information at the optimum.
    llf : float
        Maximised log-likelihood.
    nobs : int
        Rows used (rows with a missing value are dropped).
    converged : bool
    iterations : int
    formula : str
    channel : GroupModel
    start_llf : ndarray of float64
        The log-likelihood each start ended at (one start for a known channel; for
        unknown channel parameters the default, a grid and seeded random starts:
        :attr:`llf` is their maximum; see :attr:`starts_disagree`).
    information : {"observed", "expected", "opg"}
        Which information the standard errors come from; the summary says it.

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.analysis import rr_logit
    >>> from deniable.data import regression_example
    >>> example = regression_example(Warner(p=0.85))  # the examples' survey: r and x
    >>> fit = rr_logit("r ~ x", example.data, example.design)
    >>> fit.params.round(1).to_dict(), fit.converged
    ({'Intercept': -0.9, 'x': 0.9}, True)
    """

    params: pd.Series[float]
    covariance: _Array
    llf: float
    nobs: int
    converged: bool
    iterations: int
    formula: str
    channel: GroupModel
    X: _Array = field(repr=False)
    groups: NDArray[np.intp] = field(repr=False)
    reports: NDArray[np.intp] = field(repr=False)
    weights: _Array | None = field(repr=False)
    model_spec: Any = field(repr=False)
    start_llf: _Array = field(default_factory=lambda: np.empty(0), repr=False)
    information: str = "observed"

    def _profile_spec(self) -> tuple[Profile, dict[str, tuple[int, Callable[[float], float]]]]:
        """Every coefficient and channel parameter on its own coordinate; the channel's
        parameters kept inside their bounds."""
        p = self.X.shape[1]
        bounds = [(None, None)] * p + [(lo + 1e-9, hi - 1e-9) for lo, hi in self.channel.bounds]
        data = (self.X, self.groups, self.reports, self.channel, self.weights)
        x_hat = np.asarray(self.params.to_numpy(), dtype=np.float64)
        profile = Profile(
            functools.partial(negative_loglik, p=p, data=data), x_hat, -self.llf, bounds
        )
        return profile, {str(t): (i, float) for i, t in enumerate(self.params.index)}

    @property
    def starts_disagree(self) -> bool:
        """Whether fits from different starts ended at log-likelihoods more than 1e-6
        apart (a multimodal likelihood; the best one is reported)."""
        finite = self.start_llf[np.isfinite(self.start_llf)]
        return bool(finite.size > 1 and finite.max() - finite.min() > 1e-6)

    @property
    def n_coefficients(self) -> int:
        """Number of logistic coefficients ``p`` (the rest are channel parameters)."""
        return int(self.X.shape[1])

    @property
    def df_model(self) -> int:
        """Number of estimated parameters."""
        return len(self.params)

    @property
    def aic(self) -> float:
        """Akaike information criterion ``2 k - 2 llf``."""
        return 2 * self.df_model - 2 * self.llf

    @property
    def bic(self) -> float:
        """Bayesian information criterion ``k ln n - 2 llf``."""
        return self.df_model * math.log(self.nobs) - 2 * self.llf

    def lr_test(self, restricted: RRLogitResult) -> TestResult:
        """Likelihood-ratio test of this model against a nested ``restricted`` fit.

        Raises
        ------
        ValueError
            If ``restricted`` has as many or more parameters, or other rows.
        """
        if not isinstance(restricted, RRLogitResult):
            raise TypeError("restricted must be an RRLogitResult")
        df = self.df_model - restricted.df_model
        if df <= 0 or restricted.nobs != self.nobs:
            raise ValueError(
                "restricted must be fitted on the same rows with fewer parameters "
                f"(got {restricted.df_model} vs {self.df_model} parameters, "
                f"{restricted.nobs} vs {self.nobs} rows)"
            )
        stat = max(0.0, 2 * (self.llf - restricted.llf))
        return TestResult(stat, df, float(stats.chi2.sf(stat, df)), name="LR")

    def drop_terms(self, terms: list[str] | str) -> RRLogitResult:
        """Refit without the named covariate columns (for :meth:`lr_test`)."""
        names = [terms] if isinstance(terms, str) else list(terms)
        cols = list(self.params.index[: self.n_coefficients])
        bad = [t for t in names if t not in cols]
        if bad:
            raise ValueError(f"terms must name coefficients; unknown {bad}; allowed: {cols}")
        keep = [i for i, c in enumerate(cols) if c not in names]
        return fit_result(
            self.X[:, keep],
            [cols[i] for i in keep],
            self.groups,
            self.reports,
            self.channel,
            self.weights,
            formula=f"{self.formula} - ({' + '.join(names)})",
            model_spec=None,
        )

    def design_matrix(self, data: pd.DataFrame | None = None) -> _Array:
        """The rows of ``data`` (default: the fitted rows) under the fit's formula,
        shape (rows, coefficients), float64. Raises ValueError if ``data`` lacks a
        covariate, or is given to a fit refitted from a matrix."""
        if data is None:
            return self.X
        if self.model_spec is None:
            raise ValueError("this result was refitted from a matrix: predict on its own rows")
        return np.asarray(self.model_spec.get_model_matrix(data), dtype=np.float64)

    def predict(self, data: pd.DataFrame | None = None) -> _Array:
        """Predicted prevalence ``sigmoid(x beta)`` per row, shape (n,), float64.

        ``data`` defaults to the rows of the fit; new rows need every covariate.
        """
        beta = self.params.to_numpy()[: self.n_coefficients]
        return np.asarray(expit(self.design_matrix(data) @ beta))

    def report_probabilities(self) -> _Array:
        """Fitted chance of each report for each row of the fit, shape (n, m), float64:
        ``A[g_i, r] + B[g_i, r] sigmoid(x_i beta)`` at the estimated channel parameters."""
        p = self.n_coefficients
        theta = np.asarray(self.params.to_numpy()[p:], dtype=np.float64)
        A, B, _, _ = self.channel.coefficients(theta)
        s = expit(self.X @ self.params.to_numpy()[:p])
        return np.asarray(A[self.groups] + B[self.groups] * s[:, None])

    def gof(self, groups: int = 10) -> dict[str, TestResult]:
        """Goodness of fit of the model to the reports (as GLMMRR's ``RRglmGOF``).

        Fitted report chances ``lam_i`` (:meth:`report_probabilities`) against the
        reports, for yes/no reports:

        * ``hosmer_lemeshow``: rows ranked by ``lam_i`` and split into ``groups``
          groups of near-equal size (at R's quantile breaks of the ranks, as
          ``RRglmGOF``); ``sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` on ``groups - 2``
          degrees of freedom (Hosmer & Lemeshow 1980);
        * ``pearson`` and ``deviance``: over the distinct covariate-and-group patterns
          ``j`` (``n_j`` rows, ``y_j`` "yes" reports), ``sum (y_j - n_j lam_j)^2 /
          (n_j lam_j (1 - lam_j))`` and ``2 sum [y log(y / (n lam)) + (n - y)
          log((n - y) / (n (1 - lam)))]`` on ``J - p - q`` degrees of freedom (valid
          when each pattern has many rows; with continuous covariates use the
          Hosmer-Lemeshow test).

        Frequency weights are not supported here.

        Raises
        ------
        ValueError
            For reports that are not yes/no, weights, fewer than 3 groups, or no degrees
            of freedom left.
        """
        if self.channel.n_reports != 2:
            raise ValueError("goodness of fit needs yes/no reports")
        if self.weights is not None:
            raise ValueError("goodness of fit is not defined here for weighted fits")
        if not 3 <= groups <= len(self.reports):
            raise ValueError(f"groups must be in 3..{len(self.reports)}, got {groups}")
        lam = self.report_probabilities()[:, 1]
        y = (self.reports == 1).astype(np.float64)
        # rows ranked by lam (ties in row order), rank r in 1..n going to the group of
        # the interval (b_{g-1}, b_g] of the breaks b_g = 1 + (n - 1) g / groups, the
        # first closed: R's cut(rank, quantile(rank, ...)), as RRglmGOF splits; rows
        # of one covariate pattern tie exactly (X @ beta can differ in the last bit
        # between rows of a pattern, so the key is rounded)
        order = np.argsort(np.round(lam, 12), kind="stable")
        n = lam.size
        breaks = 1 + (n - 1) * np.arange(groups + 1) / groups
        ranks = np.arange(1, n + 1)
        member = np.clip(np.searchsorted(breaks, ranks, side="left"), 1, groups) - 1
        observed = np.bincount(member, y[order], groups)
        expected = np.bincount(member, lam[order], groups)
        size = np.bincount(member, minlength=groups)
        hl = float(np.sum((observed - expected) ** 2 / (expected * (1 - expected / size))))
        out = {"hosmer_lemeshow": _chi2(hl, groups - 2, "Hosmer-Lemeshow")}
        patterns = np.column_stack([self.X, self.groups])
        _, index = np.unique(patterns, axis=0, return_inverse=True)
        n_j = np.bincount(index).astype(np.float64)
        y_j = np.bincount(index, weights=y)
        lam_j = np.bincount(index, weights=lam) / n_j
        df = n_j.size - self.df_model
        if df >= 1:
            pearson = float(np.sum((y_j - n_j * lam_j) ** 2 / (n_j * lam_j * (1 - lam_j))))
            with np.errstate(divide="ignore", invalid="ignore"):
                dev = 2 * np.sum(
                    np.where(y_j > 0, y_j * np.log(y_j / (n_j * lam_j)), 0.0)
                    + np.where(
                        y_j < n_j, (n_j - y_j) * np.log((n_j - y_j) / (n_j * (1 - lam_j))), 0.0
                    )
                )
            out["pearson"] = _chi2(pearson, df, "Pearson")
            out["deviance"] = _chi2(float(dev), df, "deviance")
        return out

    def predicted_prevalence(
        self, data: pd.DataFrame | None = None, *, given_y: bool = False
    ) -> PredictedPrevalence:
        """Average predicted prevalence over ``data`` (default the fitted rows).

        With ``given_y`` (rr's ``predict(..., given.y = TRUE)``; Blair, Imai & Zhou
        2015), each fitted row's prediction also uses its own report ``y``: the
        posterior ``Pr(Z = 1 | y, x) = Pr(y | Z = 1) s / Pr(y | x)`` with ``s =
        sigmoid(x beta)``, here ``(A + B) s / (A + B s)`` for the row's channel line
        ``Pr(y | Z) = A + B Z`` (:meth:`row_posteriors`). Standard error by the delta
        method over the coefficients and the channel's parameters (gradient ``mean_i s_i
        (1 - s_i) x_i`` without ``given_y``).

        Raises
        ------
        ValueError
            For ``given_y`` with ``data``: the reports are those of the fitted rows.
        """
        if given_y:
            if data is not None:
                raise ValueError("given_y uses the fitted rows' reports: data must be None")
            post, grad = self._posterior_and_gradient()
            var = float(grad.mean(axis=0) @ self.covariance @ grad.mean(axis=0))
            return PredictedPrevalence(float(post.mean()), math.sqrt(max(var, 0.0)))
        X = self.design_matrix(data)
        p = self.n_coefficients
        s = expit(X @ self.params.to_numpy()[:p])
        grad = (X * (s * (1 - s))[:, None]).mean(axis=0)
        var = float(grad @ self.covariance[:p, :p] @ grad)
        return PredictedPrevalence(float(s.mean()), math.sqrt(max(var, 0.0)))

    def row_posteriors(self) -> _Array:
        """``Pr(Z_i = 1 | y_i, x_i)`` for each fitted row, shape (nobs,), float64 (rr's
        ``predict(..., given.y = TRUE)$est``)."""
        return self._posterior_and_gradient()[0]

    def _posterior_and_gradient(self) -> tuple[_Array, _Array]:
        """Each row's posterior and its gradient in ``(beta, theta)``, (n,) and (n, p + q)."""
        p = self.n_coefficients
        values = np.asarray(self.params.to_numpy(), dtype=np.float64)
        return row_posteriors(
            values[:p], values[p:], self.X, self.groups, self.reports, self.channel
        )

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Model, fit statistics and the coefficient table (``method``: normal or None)."""
        normal_only(method)
        head = [
            "Randomized-response logistic regression (maximum likelihood)",
            f"Formula: {self.formula}",
            f"GroupModel: {type(self.channel).__name__} groups={list(self.channel.group_labels)}",
            f"No. observations: {self.nobs}   Log-likelihood: {self.llf:.4f}   "
            f"AIC: {self.aic:.2f}   converged: {self.converged} ({self.iterations} iterations)",
            f"Std. errors: {_INFORMATION_TEXT[self.information]}",
            "",
        ]
        note = ""
        if self.starts_disagree:
            finite = self.start_llf[np.isfinite(self.start_llf)]
            note = (
                f"\nNote: fits from {finite.size} starts ended at log-likelihoods from "
                f"{finite.min():.4f} to {finite.max():.4f}; the best is reported."
            )
        profile = self.profile_note(confidence_level)
        if profile:
            note += f"\nNote: {profile}"
        return Summary("\n".join(head) + coefficient_table(self, confidence_level) + note)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape (:meth:`~deniable.estimation.EstimateResult.to_dict`): one
        label per term, the coefficients as ``estimate``; plus ``formula``, ``nobs``,
        ``llf`` and ``converged``."""
        return super().to_dict(confidence_level, method) | {
            "formula": self.formula,
            "nobs": self.nobs,
            "llf": self.llf,
            "converged": self.converged,
        }


def fit_result(
    X: _Array,
    terms: list[str],
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
    weights: _Array | None,
    *,
    formula: str,
    model_spec: Any,
    start: _Array | None = None,
    max_iter: int = 200,
    information: str = "observed",
) -> RRLogitResult:
    """Fit the randomized-response logistic likelihood and wrap it as a result.

    Shared by :func:`rr_logit` and the power simulation. ``X`` (n, p) float64 holds the
    model matrix with column names ``terms``; ``groups`` (n,) the channel group of each
    row, ``reports`` (n,) the report codes, ``weights`` (n,) optional frequency
    weights; ``information`` is ``"observed"`` or ``"opg"`` (outer product of scores).
    """
    p = X.shape[1]
    beta0 = None if start is None else np.asarray(start[:p], dtype=np.float64)
    theta0 = None if start is None or len(start) == p else np.asarray(start[p:], np.float64)
    result = fit(
        X, groups, reports, channel, weights, beta0=beta0, theta0=theta0, max_iter=max_iter
    )
    start_llf = [result.llf]
    if start is None and channel.param_names:
        # unknown channel parameters make the likelihood multimodal: refit from a grid
        # over them (each with its own intercept start) and random starts; keep the best
        for beta_s, theta_s in _extra_starts(X, groups, reports, channel, weights):
            other = fit(
                X,
                groups,
                reports,
                channel,
                weights,
                beta0=beta_s,
                theta0=theta_s,
                max_iter=max_iter,
            )
            start_llf.append(other.llf)
            if np.isfinite(other.llf) and other.llf > result.llf:
                result = other
    if information == "opg":
        S = scores(result.beta, result.theta, X, groups, reports, channel)
        w = np.ones(len(reports)) if weights is None else weights
        covariance = observed_covariance(-(S * w[:, None]).T @ S)
    elif information == "expected":
        info = expected_information(result.beta, result.theta, X, groups, channel, weights)
        covariance = observed_covariance(-info)
    else:
        covariance = observed_covariance(result.hessian)
    names = [*terms, *channel.param_names]
    return RRLogitResult(
        params=pd.Series(np.concatenate([result.beta, result.theta]), index=names),
        covariance=covariance,
        llf=result.llf,
        nobs=len(reports),
        converged=result.converged,
        iterations=result.iterations,
        formula=formula,
        channel=channel,
        X=X,
        groups=groups,
        reports=reports,
        weights=weights,
        model_spec=model_spec,
        start_llf=np.asarray(start_llf),
        information=information,
    )


def _chi2(statistic: float, df: int, name: str) -> TestResult:
    return TestResult(float(statistic), int(df), float(stats.chi2.sf(statistic, df)), name=name)


#: Where standard errors come from (see :func:`rr_logit`).
INFORMATION = ("observed", "opg", "expected")
#: Random starts beside the grid, for channels with unknown parameters.
RANDOM_STARTS = 8
#: Grid points per unknown channel parameter (fractions of its range).
GRID_FRACTIONS = (0.1, 0.5, 0.9)


def _extra_starts(
    X: _Array,
    groups: NDArray[np.intp],
    reports: NDArray[np.intp],
    channel: GroupModel,
    weights: _Array | None,
) -> list[tuple[_Array, _Array]]:
    """Starting points besides the default: every point of a grid over the channel's
    parameters (:data:`GRID_FRACTIONS` of each range), then :data:`RANDOM_STARTS` seeded
    random ones with random slopes; each intercept from :func:`start_beta`."""
    lo = np.array([b[0] for b in channel.bounds])
    hi = np.array([b[1] for b in channel.bounds])
    grids = np.meshgrid(*[np.array(GRID_FRACTIONS)] * lo.size, indexing="ij")
    fractions = np.stack([g.ravel() for g in grids], axis=1)
    rng = np.random.default_rng(20261123)  # fixed: a refit gives the same answer
    fractions = np.vstack([fractions, rng.uniform(0.05, 0.95, (RANDOM_STARTS, lo.size))])
    out = []
    for i, f in enumerate(fractions):
        theta = lo + f * (hi - lo)
        beta = start_beta(X, groups, reports, channel, theta, weights)
        if i >= len(fractions) - RANDOM_STARTS:
            beta = beta + rng.normal(0.0, 0.5, beta.size) * (beta == 0)
        out.append((beta, theta))
    return out


def report_codes(y: ArrayLike, n_reports: int, name: str) -> NDArray[np.intp]:
    """Check that the response holds report codes ``0..m-1`` (as numbers)."""
    arr = np.asarray(y, dtype=np.float64)
    codes = arr.astype(np.intp)
    if np.any(codes != arr) or np.any(codes < 0) or np.any(codes >= n_reports):
        bad = arr[(codes != arr) | (codes < 0) | (codes >= n_reports)][0]
        raise ValueError(
            f"response {name!r} must hold report codes 0..{n_reports - 1}, found {bad!r}"
        )
    return codes


def rr_logit(
    formula: str,
    data: pd.DataFrame,
    design: Design | Mapping[Hashable, Design] | GroupModel,
    *,
    group: str | None = None,
    weights: str | None = None,
    start: ArrayLike | None = None,
    max_iter: int = 200,
    information: str = "observed",
) -> RRLogitResult:
    """Logistic regression of a randomized binary answer on clear covariates.

    Parameters
    ----------
    formula : str
        Wilkinson formula, response = the report column: ``"rr.q1 ~ cov.female +
        I(cov.age / 10) + I((cov.age / 10) ** 2)"`` (``formulaic``; column names with
        dots are allowed; write powers as ``**``).
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in a used column are dropped.
        The response holds report codes ``0..m-1`` (1 = "yes" for yes/no designs).
    design : Design, mapping of group value to Design, or GroupModel
        The randomization: one design for everyone, one per randomization group
        (e.g. ``{0: direct questioning, 1: forced response}``), or a channel with
        unknown parameters (:class:`~deniable.analysis.StochasticLieDetector`,
        :class:`~deniable.analysis.CheatingDetection`,
        :class:`~deniable.analysis.UnknownInnocuous`).
    group : str, optional
        Column holding each row's randomization group (needed with several groups).
    weights : str, optional
        Column of non-negative frequency weights.
    start : array_like, optional
        Starting values (coefficients, then channel parameters).
    max_iter : int, default 200
        Newton iterations at most.
    information : {"observed", "opg", "expected"}, default "observed"
        Standard errors from the observed information (the Hessian; as
        ``RRreg::RRlog`` and ``rr::rrreg(optim = TRUE)``), from the outer product of
        the per-row scores (BHHH; the default of ``rr::rrreg``), or from the expected
        (Fisher) information at the estimate (GLMMRR's default). All are consistent;
        they differ in finite samples.

    Returns
    -------
    RRLogitResult

    Raises
    ------
    TypeError
        If ``data`` is not a DataFrame or ``design`` not a design or channel.
    ValueError
        For a malformed formula, unknown columns, responses that are not report codes,
        unknown group values, negative weights, or an unknown ``information``.

    Examples
    --------
    >>> from deniable import ForcedResponse
    >>> from deniable.data import load_rr_survey
    >>> nigeria = load_rr_survey("rr/nigeria")
    >>> fit = rr_logit("rr.q1 ~ cov.female", nigeria, ForcedResponse(p_yes=1/6, p_no=1/6))
    >>> fit.nobs, bool(fit.converged)
    (2435, True)
    """
    if information not in INFORMATION:
        raise ValueError(f"information must be one of {INFORMATION}, got {information!r}")
    channel = as_channel(design)
    frame = model_frame(formula, data)
    reports = report_codes(frame.y, channel.n_reports, frame.response)
    rows = frame.rows
    if group is not None:
        if group not in data.columns:
            raise ValueError(f"group column {group!r} is not in data")
        group_values = data.loc[rows, group].to_numpy()
    else:
        group_values = None
    groups = channel.group_codes(group_values, len(rows))
    w = None
    if weights is not None:
        if weights not in data.columns:
            raise ValueError(f"weights column {weights!r} is not in data")
        w = data.loc[rows, weights].to_numpy(dtype=np.float64)
        if np.any(~np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and >= 0")
    return fit_result(
        frame.X,
        frame.terms,
        groups,
        reports,
        channel,
        w,
        formula=formula,
        model_spec=frame.spec,
        start=None if start is None else np.asarray(start, dtype=np.float64),
        max_iter=max_iter,
        information=information,
    )
