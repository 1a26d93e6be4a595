"""Shared pieces of the likelihood-based result objects (private)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from ..estimation.common import z_quantile
from ..estimation.results import ConfidenceInterval, EstimateResult

__all__ = [
    "CoefficientsMixin",
    "LikelihoodFit",
    "TestResult",
    "WaldResult",
    "coefficient_table",
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

    params: pd.Series
    covariance: NDArray[np.float64]

    @property
    def estimate(self) -> pd.Series:
        """The coefficients, indexed by term (statsmodels' :attr:`params`)."""
        return self.params

    @property
    def std_error(self) -> pd.Series:
        """Standard errors indexed by term (statsmodels' :attr:`bse`)."""
        return self.bse

    @property
    def labels(self) -> list[str]:
        """The terms."""
        return [str(t) for t in self.params.index]

    def _wald(self, z: float) -> tuple[pd.Series, pd.Series]:
        return self.params - z * self.bse, self.params + z * self.bse

    @property
    def bse(self) -> pd.Series:
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

    params: pd.Series
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
