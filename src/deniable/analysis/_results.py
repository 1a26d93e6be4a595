"""Shared pieces of the likelihood-based result objects (private)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

from .._validation import check_confidence_level

__all__ = ["CoefficientsMixin", "TestResult", "coefficient_table", "observed_covariance"]


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


class CoefficientsMixin:
    """``params``/``bse``/``conf_int``/``wald_test`` for results holding a covariance."""

    params: pd.Series
    covariance: NDArray[np.float64]

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
        """Wald intervals, a DataFrame with columns ``lower`` and ``upper``.

        Raises
        ------
        ValueError
            For a confidence level outside (0, 1).
        """
        level = check_confidence_level(confidence_level)
        z = float(stats.norm.ppf(0.5 + level / 2))
        return pd.DataFrame(
            {"lower": self.params - z * self.bse, "upper": self.params + z * self.bse}
        )

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
            f"{ci.loc[term, 'lower']:10.4f} {ci.loc[term, 'upper']:10.4f}"
        )
    return "\n".join(lines)
