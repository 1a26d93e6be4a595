"""The list experiment's fits on the package's common result base.

Every list-experiment regression (maximum likelihood, least squares, GMM, several items,
the joint outcome model) is a :class:`ListFit`: ``params``, ``bse``, ``cov_params()``,
``conf_int(confidence_level=)``, ``confidence_interval()``, ``summary()``,
``to_frame()`` and ``to_dict()`` as every other coefficient fit of
:mod:`deniable.analysis` (statsmodels' names; Seabold & Perktold 2010).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._fitting import CoefficientsMixin, coefficient_table, normal_only
from .._validation import JSON, renamed_keywords
from ..estimation import Summary

__all__ = ["ListFit"]


@dataclass(frozen=True)
class ListFit(CoefficientsMixin):
    """A list-experiment regression: coefficients and their covariance.

    Attributes
    ----------
    params : pandas.Series of float64
        The coefficients, indexed by term (``sensitive.<term>``, ``control.<term>``,
        ...; each fit names its own).
    covariance : numpy.ndarray of float64, shape (k, k)
        The covariance of ``params`` (inverse observed information, or a sandwich).
    n : int
        Respondents fitted.
    items : int
        ``J``, the control items of a list.
    converged : bool
        The fit reached its optimum (each fit says how it judges it).
    """

    params: pd.Series[float]
    covariance: NDArray[np.float64]
    n: int
    items: int
    converged: bool

    #: The summary's first line.
    TITLE = "List-experiment regression"

    @property
    def bse(self) -> pd.Series[float]:
        """Standard errors, the square roots of the covariance's diagonal; NaN where it
        is negative (a fit at a boundary, where the information is not positive)."""
        var = np.diag(self.covariance)
        se = np.where(var >= 0, np.sqrt(np.abs(var)), np.nan)
        return pd.Series(se, index=self.params.index)

    @property
    def nobs(self) -> int:
        """Respondents fitted (statsmodels' name for :attr:`n`)."""
        return self.n

    @renamed_keywords(level="confidence_level")
    def conf_int(self, confidence_level: float = 0.95) -> pd.DataFrame:
        """Wald intervals of the coefficients, a DataFrame with columns ``low`` and
        ``high`` by term.

        Raises
        ------
        ValueError
            For a confidence level outside (0, 1).
        """
        return super().conf_int(confidence_level)

    def _summary_lines(self) -> list[str]:
        """Lines between the title and the table (each fit adds its prevalence)."""
        return []

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Title, the fit's own lines, respondents and items, then the coefficient table
        (Wald intervals; ``method`` is ``normal`` or None).

        Raises
        ------
        ValueError
            For a level outside (0, 1) or another method.
        """
        normal_only(method)
        head = [
            self.TITLE,
            *self._summary_lines(),
            f"No. observations: {self.n}   control items: {self.items}   "
            f"converged: {self.converged}",
            "",
        ]
        return Summary("\n".join(head) + coefficient_table(self, confidence_level))

    def _dict_fields(self) -> dict[str, Any]:
        """The fit's own JSON fields beside the common shape."""
        return {}

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape of every estimate (:meth:`EstimateResult.to_dict`), with
        ``items``, ``converged`` and the fit's own fields (its prevalence)."""
        out = super().to_dict(confidence_level, method)
        return out | {"items": self.items, "converged": self.converged} | self._dict_fields()
