"""Shared pieces of the likelihood-based result objects (private)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats
from scipy.special import expit

from .._validation import check_confidence_level
from ..estimation import ConfidenceInterval, EstimateResult, Summary, z_quantile

if TYPE_CHECKING:
    from ._profile import Profile

__all__ = [
    "CoefficientsMixin",
    "LikelihoodFit",
    "PosteriorMixin",
    "PredictedPrevalence",
    "TestResult",
    "WaldResult",
    "coefficient_table",
    "hessian_from_values",
    "normal_only",
    "observed_covariance",
]


def normal_only(method: str | None) -> None:
    """Accept only the Wald interval (``None`` or ``"normal"``).

    Raises
    ------
    ValueError
        Naming the method and the one allowed.
    """
    if method not in (None, "normal"):
        raise ValueError(f"method must be 'normal' (Wald) for this result, got {method!r}")


@dataclass(frozen=True)
class TestResult:
    """A chi-square test: ``statistic``, degrees of freedom ``df`` and ``pvalue``."""

    statistic: float
    df: int
    pvalue: float
    name: str = "Wald"

    def __str__(self) -> str:
        return f"{self.name} chi2({self.df}) = {self.statistic:.4f}, p = {self.pvalue:.4g}"


def observed_covariance(hessian: NDArray[np.float64]) -> NDArray[np.float64]:
    """Inverse observed information ``(-H)^-1`` (pseudo-inverse if singular)."""
    info = -hessian
    try:
        return np.asarray(np.linalg.inv(info))
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.pinv(info))


def hessian_from_gradient(
    gradient: Callable[[NDArray[np.float64]], NDArray[np.float64]], x: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Hessian of a function at ``x`` (shape (k,)) from its exact ``gradient``: central
    differences with steps ``1e-5 max(1, |x_j|)``, symmetrised; shape (k, k)."""
    k = x.size
    H = np.empty((k, k))
    for j in range(k):
        h = 1e-5 * max(1.0, abs(float(x[j])))
        e = np.zeros(k)
        e[j] = h
        H[:, j] = (gradient(x + e) - gradient(x - e)) / (2 * h)
    return (H + H.T) / 2


class WaldResult(EstimateResult):
    """A result whose interval is Wald's on its own scale.

    Subclasses give ``estimate``, ``std_error``, ``labels`` and ``_wald(z)``, the
    interval for the standard normal quantile ``z`` (plain, clipped, on a log or logit
    scale; floats for one estimate, Series indexed by term for coefficients).
    """

    def _wald(self, z: float) -> tuple[Any, Any]:
        raise NotImplementedError

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[Any]:
        """Wald interval on the result's scale: ``low`` and ``high`` shaped as ``estimate``.

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``normal``.
        """
        normal_only(method)
        return ConfidenceInterval(*self._wald(z_quantile(confidence_level)))


class CoefficientsMixin(WaldResult):
    """``params``/``bse``/``conf_int``/``wald_test`` for results holding a covariance.

    Also the package's vocabulary: ``estimate`` (= ``params``), ``std_error`` (= ``bse``),
    ``confidence_interval()`` (a :class:`~deniable.estimation.ConfidenceInterval` of two
    Series), ``summary()`` and ``to_frame()``.
    """

    params: pd.Series[float]
    covariance: NDArray[np.float64]

    def _repr_html_(self) -> str:
        """The summary for a notebook: its lines above and below the coefficients as
        text, the coefficients as an HTML table (as statsmodels' summary shows them)."""
        text = str(self.summary())
        head, found, tail = text.partition(coefficient_table(self))
        if not found:  # a summary of another shape: its text, whole
            return Summary(text)._repr_html_()
        return (
            Summary(head.rstrip())._repr_html_()
            + coefficient_html(self)
            + (Summary(tail.strip())._repr_html_() if tail.strip() else "")
        )

    @property
    def estimate(self) -> pd.Series[float]:
        """The coefficients, indexed by term (statsmodels' :attr:`params`)."""
        return self.params

    @property
    def std_error(self) -> pd.Series[float]:
        """Standard errors indexed by term (statsmodels' :attr:`bse`)."""
        return self.bse

    @property
    def labels(self) -> list[str]:
        """The terms."""
        return [str(t) for t in self.params.index]

    def _wald(self, z: float) -> tuple[pd.Series, pd.Series]:
        return self.params - z * self.bse, self.params + z * self.bse

    @property
    def bse(self) -> pd.Series[float]:
        """Standard errors (square roots of the inverse observed information's diagonal)."""
        return pd.Series(np.sqrt(np.maximum(np.diag(self.covariance), 0.0)), self.params.index)

    @property
    def tvalues(self) -> pd.Series:
        """Wald z statistics ``params / bse`` (statsmodels' name)."""
        return self.params / self.bse

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of the Wald z statistics (standard normal)."""
        return pd.Series(2 * stats.norm.sf(np.abs(self.tvalues)), self.params.index)

    def _profile_spec(self) -> tuple[Profile, dict[str, tuple[int, Callable[[float], float]]]]:
        """The likelihood to profile and, per term, its coordinate and the monotone map
        from that coordinate to the term's scale. Results without one raise."""
        raise ValueError(
            f"{type(self).__name__} has no profile-likelihood intervals; method must be "
            "'normal' (Wald)"
        )

    def profile_interval(
        self, term: str, confidence_level: float = 0.95, adjusted: bool = False
    ) -> tuple[float, float]:
        """The profile-likelihood interval of one term (:mod:`deniable.analysis`):
        ``{b: 2 (llf - max l | term = b) <= chi2_1(level)}``, on the term's scale, or
        with ``adjusted`` that of the modified signed root, ``{b: |r*(b)| <=
        z_(1 - alpha/2)}`` (Skovgaard 1996; Severini 1999). A term without a coordinate
        of its own (the joint prevalence of several randomized predictors) gets its Wald
        interval.

        Raises
        ------
        ValueError
            For an unknown term, a level outside (0, 1), a result with no profile, or
            ``adjusted`` on a fit that does not give each row's score.
        """
        if term not in self.params.index:
            raise ValueError(f"term must be one of {', '.join(map(str, self.params.index))}")
        profile, terms = self._profile_spec()
        if term not in terms:
            wald_low, wald_high = self._wald(z_quantile(confidence_level))
            return float(wald_low[term]), float(wald_high[term])
        index, scale_map = terms[term]
        se = math.sqrt(max(float(self._x_covariance(profile)[index, index]), 0.0))
        low, high = profile.interval(index, se, confidence_level, adjusted)
        ends = sorted((scale_map(low), scale_map(high)))
        return ends[0], ends[1]

    def profile_deviance(self, term: str, value: float) -> float:
        """``2 (llf - max l | term = value)`` for a coefficient (a term on its own
        coordinate): ``value`` is inside the profile interval at level ``1 - alpha``
        exactly when this is at most ``chi2_1(1 - alpha)`` (one constrained fit instead
        of the interval's root search).

        Raises
        ------
        ValueError
            For a term that is not a coefficient of its own coordinate, or no profile.
        """
        profile, terms = self._profile_spec()
        if term not in terms or terms[term][1] is not float:
            raise ValueError(f"term must be a coefficient; allowed: {', '.join(terms)}")
        return profile.deviance(terms[term][0], value)

    def signed_roots(self, term: str, value: float) -> tuple[float, float]:
        """``(r, r*)`` of a coefficient at ``value``: the signed root of the profile
        deviance and its modification (Skovgaard 1996; Severini 1999), each standard
        normal at the true value, ``r*`` to a higher order (one constrained fit).

        Raises
        ------
        ValueError
            For a term that is not a coefficient, or a fit without each row's score.
        """
        profile, terms = self._profile_spec()
        if term not in terms or terms[term][1] is not float:
            raise ValueError(f"term must be a coefficient; allowed: {', '.join(terms)}")
        return profile.signed_roots(terms[term][0], value)

    def _x_covariance(self, profile: Profile) -> NDArray[np.float64]:
        """The covariance of the optimiser's coordinates (default: of the terms)."""
        return self.covariance

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[Any]:
        """Wald (``normal``, the default), profile-likelihood (``profile``) or modified
        signed root (``rstar``: the profile interval adjusted to a higher order, for
        fits that give each row's score) intervals of every term, Series by term.

        Raises
        ------
        ValueError
            For a level outside (0, 1), another method, or ``profile`` / ``rstar`` on a
            result that has none.
        """
        if method not in ("profile", "rstar"):
            return super().confidence_interval(confidence_level, method)
        adjusted = method == "rstar"
        pairs = [
            self.profile_interval(str(t), confidence_level, adjusted) for t in self.params.index
        ]
        index = self.params.index
        return ConfidenceInterval(
            pd.Series([a for a, _ in pairs], index), pd.Series([b for _, b in pairs], index)
        )

    def profile_note(self, confidence_level: float = 0.95) -> str | None:
        """A note for the summary when a coefficient's Wald and profile intervals
        disagree (an end apart by more than 5% of the Wald half-width; coefficients on
        their own coordinate only): the likelihood is not quadratic there, so the
        profile interval is the one to report."""
        try:
            _, terms = self._profile_spec()
        except ValueError:
            return None
        wald_low, wald_high = self._wald(z_quantile(confidence_level))
        apart, first = [], None
        for term, (_, scale_map) in terms.items():
            if scale_map is not float:
                continue
            try:
                low, high = self.profile_interval(term, confidence_level)
            except (ValueError, RuntimeError, ArithmeticError):  # the summary never fails
                continue
            half = float(wald_high[term] - wald_low[term]) / 2
            if max(abs(low - wald_low[term]), abs(high - wald_high[term])) > 0.05 * half:
                first = first or term
                apart.append(
                    f"{term} (Wald [{wald_low[term]:.4g}, {wald_high[term]:.4g}], "
                    f"profile [{low:.4g}, {high:.4g}])"
                )
        if first is None:
            return None
        try:  # the interval shown to meet the goal, where the fit gives each row's score
            self.profile_interval(first, confidence_level, adjusted=True)
        except (ValueError, RuntimeError, ArithmeticError):
            advice = (
                "report confidence_interval(method='profile'), closer than Wald but not shown "
                "to reach the level in a weak design (0.938 against a goal of 0.9387, "
                "docs/analysis.md)"
            )
        else:
            advice = (
                "report confidence_interval(method='rstar'), the modified signed root, shown "
                "to reach the level in a weak design where the profile falls short (rr_linear's "
                "slope, Warner(0.65), n = 1,000: 0.942 and 0.938 against a goal of 0.9387, "
                "docs/analysis.md)"
            )
        return (
            "Wald and profile-likelihood intervals disagree for "
            + "; ".join(apart)
            + f": the likelihood is not quadratic there; {advice}"
        )

    def cov_params(self) -> pd.DataFrame:
        """Covariance of the estimates as a DataFrame indexed by term."""
        idx = self.params.index
        return pd.DataFrame(self.covariance, index=idx, columns=idx)

    def conf_int(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """Wald intervals, a DataFrame with columns ``low`` and ``high`` (every interval's words).

        Raises
        ------
        ValueError
            For a confidence level outside (0, 1).
        """
        low, high = self._wald(z_quantile(confidence_level))
        return pd.DataFrame({"low": low, "high": high})

    def wald_test(self, terms: list[str] | str) -> TestResult:
        """Joint Wald test that the named coefficients are all zero.

        Raises
        ------
        ValueError
            If a term is not a coefficient (the message lists them).
        """
        names = [terms] if isinstance(terms, str) else list(terms)
        missing = [t for t in names if t not in self.params.index]
        if missing or not names:
            raise ValueError(
                f"terms must name coefficients; unknown {missing}; allowed: "
                + ", ".join(self.params.index)
            )
        idx = [int(self.params.index.get_loc(t)) for t in names]  # type: ignore[arg-type]
        b = self.params.to_numpy()[idx]
        V = self.covariance[np.ix_(idx, idx)]
        stat = float(b @ np.linalg.solve(V, b))
        return TestResult(stat, len(idx), float(stats.chi2.sf(stat, len(idx))))


class PosteriorMixin(EstimateResult):
    """The common base of a fit summarised by posterior draws: ``params``/``estimate``
    the posterior means, ``bse``/``std_error`` the posterior standard deviations,
    ``confidence_interval`` and ``conf_int`` the equal-tailed credible interval
    (``bayes``, the only method), ``cov_params()`` the draws' covariance.

    Subclasses give ``_draws_frame()``: the kept draws, one row per draw, one column
    per term (pandas.DataFrame of float64).
    """

    def _draws_frame(self) -> pd.DataFrame:
        raise NotImplementedError

    @property
    def labels(self) -> list[str]:
        """The terms (the draws' columns)."""
        return [str(c) for c in self._draws_frame().columns]

    @property
    def params(self) -> pd.Series[float]:
        """Posterior means by term."""
        return self._draws_frame().mean()

    @property
    def bse(self) -> pd.Series[float]:
        """Posterior standard deviations by term (``ddof=1``)."""
        return self._draws_frame().std(ddof=1)

    @property
    def estimate(self) -> pd.Series[float]:
        """Posterior means by term (= :attr:`params`)."""
        return self.params

    @property
    def std_error(self) -> pd.Series[float]:
        """Posterior standard deviations by term (= :attr:`bse`)."""
        return self.bse

    @property
    def default_interval_method(self) -> str:
        """``bayes``: the equal-tailed credible interval of the draws."""
        return "bayes"

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[Any]:
        """Each term's equal-tailed credible interval: the ``(1 - level) / 2`` and
        ``(1 + level) / 2`` quantiles of its draws, Series by term.

        Raises
        ------
        ValueError
            For a level outside (0, 1) or a method other than ``bayes``.
        """
        if method not in (None, "bayes"):
            raise ValueError(
                f"method must be 'bayes' (a posterior's credible interval), got {method!r}"
            )
        level = check_confidence_level(confidence_level)
        draws = self._draws_frame()
        return ConfidenceInterval(draws.quantile((1 - level) / 2), draws.quantile((1 + level) / 2))

    def conf_int(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """The credible intervals as a DataFrame with columns ``low`` and ``high``.

        Raises
        ------
        ValueError
            For a level outside (0, 1).
        """
        ci = self.confidence_interval(confidence_level)
        return pd.DataFrame({"low": ci.low, "high": ci.high})

    def cov_params(self) -> pd.DataFrame:
        """The posterior covariance of the terms, a DataFrame indexed by term."""
        return self._draws_frame().cov()


def coefficient_table(result: CoefficientsMixin, confidence_level: float = 0.95) -> str:
    """statsmodels-like text table of the coefficients."""
    ci = result.conf_int(confidence_level)
    lo, hi = f"[{(1 - confidence_level) / 2:.3f}", f"{1 - (1 - confidence_level) / 2:.3f}]"
    width = max(12, *(len(str(t)) for t in result.params.index))
    head = (
        f"{'':{width}s} {'coef':>10s} {'std err':>10s} {'z':>8s} {'P>|z|':>8s} {lo:>10s} {hi:>10s}"
    )
    lines = [head, "-" * len(head)]
    for term in result.params.index:
        lines.append(
            f"{term!s:{width}s} {result.params[term]:10.4f} {result.bse[term]:10.4f} "
            f"{result.tvalues[term]:8.3f} {result.pvalues[term]:8.3f} "
            f"{ci.loc[term, 'low']:10.4f} {ci.loc[term, 'high']:10.4f}"
        )
    return "\n".join(lines)


def coefficient_html(result: CoefficientsMixin, confidence_level: float = 0.95) -> str:
    """The coefficient table of :func:`coefficient_table` as HTML (escaped terms)."""
    from html import escape

    ci = result.conf_int(confidence_level)
    lo, hi = f"[{(1 - confidence_level) / 2:.3f}", f"{1 - (1 - confidence_level) / 2:.3f}]"
    head = "".join(f"<th>{h}</th>" for h in ("", "coef", "std err", "z", "P&gt;|z|", lo, hi))
    rows = "".join(
        f"<tr><th>{escape(str(term))}</th><td>{result.params[term]:.4f}</td>"
        f"<td>{result.bse[term]:.4f}</td><td>{result.tvalues[term]:.3f}</td>"
        f"<td>{result.pvalues[term]:.3f}</td><td>{ci.loc[term, 'low']:.4f}</td>"
        f"<td>{ci.loc[term, 'high']:.4f}</td></tr>"
        for term in result.params.index
    )
    return (
        f'<table class="deniable-summary"><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


@dataclass(frozen=True)
class LikelihoodFit(CoefficientsMixin):
    """A model fitted by maximum likelihood: coefficients, covariance, fit statistics.

    Attributes
    ----------
    params : pandas.Series
        Estimates indexed by term.
    covariance : ndarray, shape (k, k)
        Inverse observed information.
    llf : float
        Maximised log-likelihood.
    nobs : int
    converged : bool
    formula : str
    """

    params: pd.Series[float]
    covariance: NDArray[np.float64]
    llf: float
    nobs: int
    converged: bool
    formula: str

    def _summary(self, title: str, confidence_level: float, *lines: str) -> str:
        """Title, formula, extra lines, fit statistics, then the coefficient table."""
        head = [
            title,
            f"Formula: {self.formula}",
            *lines,
            f"No. observations: {self.nobs}   Log-likelihood: {self.llf:.4f}   "
            f"converged: {self.converged}",
            "",
        ]
        return "\n".join(head) + coefficient_table(self, confidence_level)


def hessian_from_values(
    f: Callable[[NDArray[np.float64]], float], x: NDArray[np.float64], f0: float
) -> NDArray[np.float64]:
    """The Hessian of ``f`` at ``x`` by central differences of its values (steps
    ``1e-4 max(1, |x_i|)``), shape (k, k), for a likelihood without a gradient;
    ``f0 = f(x)``."""
    k = x.size
    H = np.empty((k, k))
    steps = 1e-4 * np.maximum(1.0, np.abs(x))
    for i in range(k):
        for j in range(i, k):
            ei = np.zeros(k)
            ej = np.zeros(k)
            ei[i], ej[j] = steps[i], steps[j]
            if i == j:
                H[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / steps[i] ** 2
            else:
                H[i, j] = H[j, i] = (
                    f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)
                ) / (4 * steps[i] * steps[j])
    return H


@dataclass(frozen=True)
class PredictedPrevalence(WaldResult):
    """Average predicted prevalence over a set of rows, with a delta-method interval.

    Attributes
    ----------
    estimate : float
        ``mean_i sigmoid(x_i beta)``, in [0, 1]; with ``difference``, the difference of
        two such averages, in [-1, 1].
    std_error : float
        Delta-method standard error from the covariance of ``beta``.
    difference : bool, default False
        The estimate is a difference of two averages: its interval is Wald's, plain,
        clipped to [-1, 1] (an average's is Wald's on the logit scale).

    Examples
    --------
    >>> from deniable import Warner
    >>> from deniable.analysis import rr_logit
    >>> from deniable.data import regression_example
    >>> example = regression_example(Warner(p=0.85))  # the examples' survey: r and x
    >>> prevalence = rr_logit("r ~ x", example.data, example.design).predicted_prevalence()
    >>> round(prevalence.estimate, 3), round(prevalence.std_error, 3)
    (0.317, 0.015)
    """

    estimate: float
    std_error: float
    difference: bool = False

    @property
    def labels(self) -> list[str]:
        """One label: ``"prevalence"`` (``"difference"`` for a difference)."""
        return ["difference" if self.difference else "prevalence"]

    def _wald(self, z: float) -> tuple[float, float]:
        """On the logit scale, mapped back (stays inside (0, 1)); plain for a
        difference, clipped to [-1, 1]."""
        if self.difference:
            half = z * self.std_error
            return max(self.estimate - half, -1.0), min(self.estimate + half, 1.0)
        p = min(max(self.estimate, 1e-12), 1 - 1e-12)
        se_logit = self.std_error / (p * (1 - p))
        centre = math.log(p / (1 - p))
        return float(expit(centre - z * se_logit)), float(expit(centre + z * se_logit))
