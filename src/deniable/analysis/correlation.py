"""Correlations involving randomized-response variables (as RRreg's ``RRcor``).

A binary randomized variable ``X`` (prevalence ``pi``) is seen through a report ``R``
with ``E[R | X] = c + d X`` (every binary design: ``c = P[1, 0]``, ``d = P[1, 1] -
P[1, 0]`` for report 1), randomized independently of everything else. Then
``Cov(R, Y) = d Cov(X, Y)`` for any other variable ``Y`` and
``Cov(R1, R2) = d1 d2 Cov(X1, X2)`` for two randomized variables, while
``Var(X) = pi (1 - pi)`` with ``pi = (mean(R) - c) / d``. The correlation of the true
variables is therefore (Fox & Tracy 1984; Heck & Moshagen 2018, ``RRcor``)::

    cor(X, Y) = cov(R, Y) / (d sqrt(pi (1 - pi) var(Y)))

with every moment replaced by its sample value. The estimate can leave [-1, 1] in
small samples (it is not clipped). Standard errors and percentile intervals come from
a seeded nonparametric bootstrap over respondents, vectorised as multinomial
resampling weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..estimation.results import ConfidenceInterval, EstimateResult
from ..mechanisms.designs import Design, is_design
from ..validation import check_confidence_level, check_integer

__all__ = [
    "MAX_BOOTSTRAP_CELLS",
    "CorrelationResult",
    "rr_correlation",
]

_Array = NDArray[np.float64]
#: Bootstrap replicates times respondents drawn at once, times 10 (bounds memory: the
#: replicates run in chunks of at most ``MAX_BOOTSTRAP_CELLS / (10 n)``).
MAX_BOOTSTRAP_CELLS = 50_000_000


@dataclass(frozen=True)
class CorrelationResult(EstimateResult):
    """Correlations of every pair of variables, with bootstrap standard errors.

    Attributes
    ----------
    estimate : pandas.Series
        One correlation per pair, indexed ``"a ~ b"``.
    std_error : pandas.Series
        Bootstrap standard deviation of each correlation.
    matrix : pandas.DataFrame
        The correlations as a symmetric matrix (1 on the diagonal).
    replicates : ndarray, shape (bootstrap, pairs)
        The bootstrap correlations (percentile intervals).
    n : int
        Respondents used (rows with a missing value are dropped).
    """

    estimate: pd.Series
    std_error: pd.Series
    matrix: pd.DataFrame
    replicates: _Array = field(repr=False)
    n: int = 0

    @property
    def labels(self) -> list[str]:
        """The pairs, ``"a ~ b"``."""
        return [str(i) for i in self.estimate.index]

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[pd.Series[float]]:
        """Percentile bootstrap (``"percentile"``, default) or Wald (``"normal"``)
        intervals, Series indexed by pair.

        Raises
        ------
        ValueError
            For another method or a level outside (0, 1).
        """
        level = check_confidence_level(confidence_level)
        method = method or "percentile"
        if method == "percentile":
            alpha = (1 - level) / 2
            low = np.nanquantile(self.replicates, alpha, axis=0)
            high = np.nanquantile(self.replicates, 1 - alpha, axis=0)
        elif method == "normal":
            from ..estimation.common import z_quantile

            half = z_quantile(level) * self.std_error.to_numpy()
            low, high = self.estimate.to_numpy() - half, self.estimate.to_numpy() + half
        else:
            raise ValueError(f"method must be 'percentile' or 'normal', got {method!r}")
        index = self.estimate.index
        return ConfidenceInterval(pd.Series(low, index=index), pd.Series(high, index=index))


def _affine(design: Design, name: str) -> tuple[float, float]:
    if not is_design(design):
        raise ValueError(
            f"designs[{name!r}] must be a design with a known misclassification matrix "
            f"(yes/no), got {type(design).__name__}: group designs with unknown "
            "parameters (the stochastic lie detector in two groups) are not supported here"
        )
    if design.n_truths != 2 or design.n_reports != 2:
        raise ValueError(f"designs[{name!r}] must be a yes/no design (2 truths, 2 reports)")
    c = float(design.matrix[1, 0])
    d = float(design.matrix[1, 1] - design.matrix[1, 0])
    return c, d


def _correlations(
    values: _Array, weights: _Array, c: _Array, d: _Array, randomized: NDArray[np.bool_]
) -> _Array:
    """Correlation matrices for each row of resampling ``weights``, shape (B, p, p)."""
    B, p = weights.shape[0], values.shape[1]
    total = weights.sum(axis=1, keepdims=True)  # (B, 1)
    mean = weights @ values / total  # (B, p)
    products = (values[:, :, None] * values[:, None, :]).reshape(-1, p * p)
    second = (weights @ products).reshape(B, p, p) / total[:, :, None]
    cov = second - mean[:, :, None] * mean[:, None, :]
    # the randomized variables' scale: d; their true variance: pi (1 - pi)
    scale = np.where(randomized, d, 1.0)
    pi = (mean - c) / np.where(randomized, d, 1.0)
    var = np.where(randomized[None, :], pi * (1 - pi), np.diagonal(cov, axis1=1, axis2=2))
    cov_true = cov / (scale[:, None] * scale[None, :])[None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = cov_true / np.sqrt(var[:, :, None] * var[:, None, :])
    idx = np.arange(values.shape[1])
    out[:, idx, idx] = 1.0
    return np.asarray(out)


def rr_correlation(
    data: pd.DataFrame,
    columns: list[str],
    designs: Mapping[str, Design],
    *,
    bootstrap: int = 200,
    rng: np.random.Generator | int = 0,
) -> CorrelationResult:
    """Pearson correlations among ``columns``, some of them randomized reports.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in ``columns`` are dropped.
    columns : list of str, at least 2
        Variables to correlate. A column named in ``designs`` holds yes/no report codes
        (0/1) of that design; the others are observed directly (numbers).
    designs : mapping of column name to Design
        The yes/no design of each randomized column.
    bootstrap : int in [2, 100000], default 200
        Bootstrap replicates for the standard errors and percentile intervals.
    rng : numpy.random.Generator or int, default 0
        Seed of the bootstrap (a repeated analysis gives the same numbers).

    Returns
    -------
    CorrelationResult

    Raises
    ------
    ValueError
        For unknown columns, a design naming no column, a design that is not yes/no,
        reports other than 0/1, fewer than 3 rows, or more than 100000 replicates.
    """
    if len(columns) < 2:
        raise ValueError("columns must name at least 2 variables")
    unknown = [c for c in [*columns, *designs] if c not in data.columns]
    if unknown:
        raise ValueError(f"columns {unknown} are not in data")
    extra = [name for name in designs if name not in columns]
    if extra:
        raise ValueError(f"designs name {extra}, which are not among columns {columns}")
    B = check_integer("bootstrap", bootstrap, minimum=2)
    if B > 100_000:
        raise ValueError(f"bootstrap must be at most 100000, got {B}")
    frame = data[columns].dropna()
    values = frame.to_numpy(dtype=np.float64)
    n = values.shape[0]
    if n < 3:
        raise ValueError(f"need at least 3 complete rows, got {n}")
    randomized = np.array([c in designs for c in columns])
    c = np.zeros(len(columns))
    d = np.ones(len(columns))
    for j, name in enumerate(columns):
        if name in designs:
            if not np.isin(values[:, j], (0.0, 1.0)).all():
                raise ValueError(f"column {name!r} must hold report codes 0 and 1")
            c[j], d[j] = _affine(designs[name], name)
    point = _correlations(values, np.ones((1, n)), c, d, randomized)[0]
    generator = np.random.default_rng(rng)
    reps = np.empty((B, len(columns) * (len(columns) - 1) // 2))
    upper = np.triu_indices(len(columns), k=1)
    chunk = max(1, MAX_BOOTSTRAP_CELLS // (10 * n))
    for start in range(0, B, chunk):
        size = min(chunk, B - start)
        # resampling weights: how often each row is drawn in each replicate
        draws = generator.integers(0, n, (size, n)) + (np.arange(size) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)
        weights = counts.astype(np.float64)
        reps[start : start + size] = _correlations(values, weights, c, d, randomized)[
            :, upper[0], upper[1]
        ]
    names = [f"{columns[i]} ~ {columns[j]}" for i, j in zip(*upper, strict=True)]
    estimate = pd.Series(point[upper], index=names)
    std_error = pd.Series(np.nanstd(reps, axis=0, ddof=1), index=names)
    matrix = pd.DataFrame(point, index=columns, columns=columns)
    if not math.isfinite(float(np.nanmax(np.abs(point)))):  # pragma: no cover - degenerate
        raise ValueError("a variable has no variance: its correlations are undefined")
    return CorrelationResult(estimate, std_error, matrix, reps, n)
