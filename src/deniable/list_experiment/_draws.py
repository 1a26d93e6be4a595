"""Summaries of posterior draws shared by the Bayesian list fits (:mod:`._posterior`,
:mod:`._hierarchical`): equal-tailed intervals, the summary table, batch-means Monte
Carlo standard errors (Flegal, Haran & Jones 2008) and the checks of a prediction's
arguments.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._fitting import PosteriorMixin
from .._validation import check_confidence_level
from ..estimation import ConfidenceInterval, summary_table

__all__ = [
    "batch_se",
    "check_prediction",
    "deprecated_credible_interval",
    "draws_interval",
    "draws_summary",
    "posterior_table",
]


def check_prediction(data: object, versus: object, confidence_level: float) -> float:
    """The checked confidence level of a prediction; refuse a level outside (0, 1), or
    ``versus`` without ``data`` (ValueError)."""
    level = check_confidence_level(confidence_level)
    if data is None and versus is not None:
        raise ValueError("versus needs data: the rows to compare it with")
    return level


def draws_summary(table: pd.DataFrame, level: float) -> pd.DataFrame:
    """Each column's posterior mean, SD and equal-tailed interval at ``level``: one row
    per column, columns ``mean``, ``sd``, ``low``, ``high``."""
    interval = draws_interval(table, level)
    return pd.DataFrame(
        {"mean": table.mean(), "sd": table.std(ddof=1), "low": interval.low,
         "high": interval.high}
    )  # fmt: skip


def deprecated_credible_interval(fit: PosteriorMixin, level: float) -> ConfidenceInterval[Any]:
    """``credible_interval(level)``, the old name of ``confidence_interval``: warns and
    forwards."""
    warnings.warn(
        f"{type(fit).__name__}.credible_interval is renamed confidence_interval (the "
        "package's one name; its method is 'bayes'); the old name goes in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
    return fit.confidence_interval(level)


def posterior_table(
    fit: PosteriorMixin, mc_se: pd.Series, confidence_level: float, method: str | None
) -> str:
    """Each term's posterior mean, SD, Monte Carlo SE and equal-tailed interval, a text
    table (ValueError for a level outside (0, 1) or a method other than ``bayes``)."""
    ci = fit.confidence_interval(confidence_level, method)
    columns = {
        "mean": fit.params.to_numpy(),
        "sd": fit.bse.to_numpy(),
        "mc_se": mc_se.to_numpy(),
        "low": ci.low.to_numpy(),
        "high": ci.high.to_numpy(),
    }
    return summary_table("", fit.labels, columns, f"{confidence_level:.0%} equal-tailed intervals")


def draws_interval(draws: pd.DataFrame, level: float) -> ConfidenceInterval[pd.Series]:
    """Each column's equal-tailed interval of posterior draws, ``level`` in (0, 1).

    Raises
    ------
    ValueError
        For a level outside (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    tail = (1 - level) / 2
    return ConfidenceInterval(draws.quantile(tail), draws.quantile(1 - tail))


def batch_se(chain: NDArray[np.float64], batches: int = 50) -> NDArray[np.float64]:
    """Batch-means Monte Carlo SE of each column's mean."""
    size = chain.shape[0] // batches
    means = chain[: size * batches].reshape(batches, size, -1).mean(axis=1)
    return np.asarray(means.std(axis=0, ddof=1) / math.sqrt(batches), dtype=np.float64)
