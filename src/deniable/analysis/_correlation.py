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
small samples (it is not clipped).

A variable randomized in several groups (a :class:`~deniable.analysis.GroupModel`, e.g.
the stochastic lie detector in two groups, whose honesty ``t`` is unknown) has its
own ``c_g, d_g`` in each group ``g``. Its prevalence and parameters are estimated by
maximum likelihood from all its reports (:func:`~deniable.analysis.estimate_channel`);
each pair involving it is then corrected within each group and the groups are
averaged, as RRreg's ``RRcor`` does (Heck & Moshagen 2018, Sec. 3.1)::

    r_g = cor_g(R, Y) sqrt(1 + q_g),   1 + q_g = m_g (1 - m_g) / (d_g^2 pi (1 - pi)),
    m_g = c_g + d_g pi,   cor(X, Y) = sum_g w_g r_g / sum_g w_g,
    w_g = n_g / ((1 + q_g)(1 + q'_g))

(``q_g`` is the share of the report's variance due to the randomization, 0 for a
variable observed directly; with one group this is the formula above).

Standard errors and percentile intervals come from a seeded nonparametric bootstrap
over respondents, vectorised as multinomial resampling weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._validation import check_confidence_level, check_integer
from ..estimation import ConfidenceInterval, EstimateResult
from ..mechanisms import Design, is_design
from ._group_channels import GroupModel
from ._prevalence import _maximise, estimate_channel

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

    Examples
    --------
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> x = example.data["x"]
    >>> from deniable.analysis import rr_correlation
    >>> result = rr_correlation(data, ["r", "x"], {"r": design}, bootstrap=50)
    >>> list(result.estimate.index)
    ['r ~ x']
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
            from ..estimation import z_quantile

            half = z_quantile(level) * self.std_error.to_numpy()
            low, high = self.estimate.to_numpy() - half, self.estimate.to_numpy() + half
        else:
            raise ValueError(f"method must be 'percentile' or 'normal', got {method!r}")
        index = self.estimate.index
        return ConfidenceInterval(pd.Series(low, index=index), pd.Series(high, index=index))


def _affine(design: Design | GroupModel, name: str) -> tuple[float, float]:
    if not is_design(design):
        raise ValueError(
            f"designs[{name!r}] must be a design with a known misclassification matrix "
            f"(yes/no) or a GroupModel, got {type(design).__name__}"
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


def _grouped_correlations(
    values: _Array,
    weights: _Array,
    parts: NDArray[np.intp],
    c: _Array,
    d: _Array,
    pi: _Array,
    randomized: NDArray[np.bool_],
) -> _Array:
    """RRcor's group-averaged correlations, shape (B, p, p), for resampling
    ``weights`` (B, n); ``c, d`` of shape (B, S, p) in each part ``s`` of the rows
    (``parts``, shape (n,)), ``pi`` of shape (B, p)."""
    B, p = weights.shape[0], values.shape[1]
    products = (values[:, :, None] * values[:, None, :]).reshape(-1, p * p)
    num = np.zeros((B, p, p))
    den = np.zeros((B, p, p))
    for s in range(int(parts.max()) + 1):
        w = weights * (parts == s)[None, :]
        size = w.sum(axis=1)  # (B,)
        safe = np.where(size > 0, size, 1.0)[:, None]
        mean = w @ values / safe
        cov = (w @ products).reshape(B, p, p) / safe[:, :, None] - (
            mean[:, :, None] * mean[:, None, :]
        )
        var = np.diagonal(cov, axis1=1, axis2=2)
        m = c[:, s] + d[:, s] * pi
        with np.errstate(invalid="ignore", divide="ignore"):
            inflation = np.where(
                randomized, m * (1 - m) / (d[:, s] ** 2 * pi * (1 - pi)), 1.0
            )  # 1 + q, (B, p)
            r = cov / np.sqrt(var[:, :, None] * var[:, None, :])
        sign = np.sign(d[:, s])
        r = r * (sign[:, :, None] * sign[:, None, :])
        both = inflation[:, :, None] * inflation[:, None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = size[:, None, None] / both
        with np.errstate(invalid="ignore"):  # a replicate whose prevalence is 0 or 1
            num += np.where(size[:, None, None] > 0, weight * r * np.sqrt(both), 0.0)
        den += np.where(size[:, None, None] > 0, weight, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(num / den)


def rr_correlation(
    data: pd.DataFrame,
    columns: list[str],
    designs: Mapping[str, Design | GroupModel],
    *,
    group: str | None = None,
    bootstrap: int = 200,
    rng: np.random.Generator | int = 0,
    clip: bool = False,
) -> CorrelationResult:
    """Pearson correlations among ``columns``, some of them randomized reports.

    Parameters
    ----------
    data : pandas.DataFrame
        One row per respondent; rows with a missing value in ``columns`` (or
        ``group``) are dropped.
    columns : list of str, at least 2
        Variables to correlate. A column named in ``designs`` holds yes/no report codes
        (0/1) of that design; the others are observed directly (numbers).
    designs : mapping of column name to Design or GroupModel
        The yes/no design of each randomized column, or a yes/no
        :class:`~deniable.analysis.GroupModel` randomized differently by group, with
        unknown parameters estimated from the reports (e.g.
        ``StochasticLieDetector([2/12, 10/12], group_labels=[1, 2])``).
    group : str, optional
        Column holding each row's randomization group; required with a group model of
        several groups.
    bootstrap : int in [2, 100000], default 200
        Bootstrap replicates for the standard errors and percentile intervals (rows
        resampled with replacement, the group models refitted in each replicate).
    rng : numpy.random.Generator or int, default 0
        Seed of the bootstrap (a repeated analysis gives the same numbers).
    clip : bool, default False
        Clip the estimate and every bootstrap replicate to [-1, 1], as RRcor does. The
        unclipped estimate is the moment estimator; near a prevalence of 0 or 1 its
        replicates have a long tail beyond 1 (the minaret data: 2.5% of them), which
        inflates the bootstrap standard error (0.21 unclipped, 0.14 clipped) but not
        the percentile interval.

    Returns
    -------
    CorrelationResult

    Raises
    ------
    ValueError
        For unknown columns, a design naming no column, a design that is not yes/no,
        reports other than 0/1, a missing ``group`` or a value in it that is no
        randomization group, fewer than 3 rows, or more than 100000 replicates.

    Examples
    --------
    >>> from deniable.data import regression_example
    >>> example = regression_example()  # r (forced response) and x
    >>> data, design = example.data, example.design
    >>> x = example.data["x"]
    >>> result = rr_correlation(data, ["r", "x"], {"r": design}, bootstrap=50)
    >>> list(result.estimate.index), bool(result.estimate.iloc[0] > 0.2)
    (['r ~ x'], True)
    """
    B = _check_correlation(data, columns, designs, group, bootstrap)
    channels = {k: v for k, v in designs.items() if isinstance(v, GroupModel)}
    used = list(dict.fromkeys([*columns, *([group] if group else [])]))
    frame = data[used].dropna()
    values = frame[columns].to_numpy(dtype=np.float64)
    n = values.shape[0]
    if n < 3:
        raise ValueError(f"need at least 3 complete rows, got {n}")
    randomized = np.array([c in designs and c not in channels for c in columns])
    c = np.zeros(len(columns))
    d = np.ones(len(columns))
    for j, name in enumerate(columns):
        if name in designs:
            if not np.isin(values[:, j], (0.0, 1.0)).all():
                raise ValueError(f"column {name!r} must hold report codes 0 and 1")
            if name not in channels:
                c[j], d[j] = _affine(designs[name], name)
    grouped = _Grouped.of(frame, columns, channels, group) if channels else None
    ones = np.ones((1, n))
    point = _correlations(values, ones, c, d, randomized)[0]
    if grouped is not None:
        point = grouped.correct(point[None], values, ones, c, d, randomized, refit=False)[0]
    upper = np.triu_indices(len(columns), k=1)
    corrections = (c, d, randomized, grouped)
    reps = _bootstrap(values, corrections, upper, B, np.random.default_rng(rng))
    if clip:
        point, reps = np.clip(point, -1.0, 1.0), np.clip(reps, -1.0, 1.0)
    names = [f"{columns[i]} ~ {columns[j]}" for i, j in zip(*upper, strict=True)]
    estimate = pd.Series(point[upper], index=names)
    std_error = pd.Series(np.nanstd(reps, axis=0, ddof=1), index=names)
    matrix = pd.DataFrame(point, index=columns, columns=columns)
    if not math.isfinite(float(np.nanmax(np.abs(point)))):  # pragma: no cover - degenerate
        raise ValueError("a variable has no variance: its correlations are undefined")
    return CorrelationResult(estimate, std_error, matrix, reps, n)


def _check_correlation(
    data: pd.DataFrame,
    columns: list[str],
    designs: Mapping[str, Any],
    group: str | None,
    bootstrap: int,
) -> int:
    """Check the columns, designs, group and bootstrap size; the replicates to draw."""
    if len(columns) < 2:
        raise ValueError("columns must name at least 2 variables")
    unknown = [c for c in [*columns, *designs, *([group] if group else [])] if c not in data]
    if unknown:
        raise ValueError(f"columns {unknown} are not in data")
    extra = [name for name in designs if name not in columns]
    if extra:
        raise ValueError(f"designs name {extra}, which are not among columns {columns}")
    B = check_integer("bootstrap", bootstrap, minimum=2)
    if B > 100_000:
        raise ValueError(f"bootstrap must be at most 100000, got {B}")
    for name, channel in designs.items():
        if not isinstance(channel, GroupModel):
            continue
        if channel.n_reports != 2:
            raise ValueError(f"designs[{name!r}] must be a yes/no group model (2 reports)")
        if channel.n_groups > 1 and group is None:
            raise ValueError(
                f"group is required: designs[{name!r}] has randomization groups "
                f"{list(channel.group_labels)}"
            )
    return B


def _bootstrap(
    values: NDArray[np.float64],
    corrections: tuple[Any, Any, Any, Any],
    upper: tuple[NDArray[np.intp], NDArray[np.intp]],
    B: int,
    generator: np.random.Generator,
) -> NDArray[np.float64]:
    """``B`` bootstrap replicates of the upper triangle of the corrected correlations,
    drawn as resampling weights in chunks of bounded memory."""
    c, d, randomized, grouped = corrections
    n = values.shape[0]
    reps = np.empty((B, upper[0].size))
    chunk = max(1, MAX_BOOTSTRAP_CELLS // (10 * n))
    for start in range(0, B, chunk):
        size = min(chunk, B - start)
        # resampling weights: how often each row is drawn in each replicate
        draws = generator.integers(0, n, (size, n)) + (np.arange(size) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)
        weights = counts.astype(np.float64)
        r = _correlations(values, weights, c, d, randomized)
        if grouped is not None:
            r = grouped.correct(r, values, weights, c, d, randomized, refit=True)
        reps[start : start + size] = r[:, upper[0], upper[1]]
    return reps


@dataclass(frozen=True)
class _Grouped:
    """The columns randomized by group models: each one's channel, the rows' group
    codes in it, the fit on all rows, and the parts of the rows (one per group)."""

    index: list[int]
    channels: list[GroupModel]
    codes: list[NDArray[np.intp]]
    fits: list[_Array]
    parts: NDArray[np.intp]
    part_codes: list[NDArray[np.intp]]  # each channel's group of each part

    @staticmethod
    def of(
        frame: pd.DataFrame,
        columns: list[str],
        channels: Mapping[str, GroupModel],
        group: str | None,
    ) -> _Grouped:
        raw = None if group is None else frame[group].to_numpy()
        labels, parts = (
            (np.zeros(1), np.zeros(len(frame), dtype=np.intp))
            if raw is None
            else np.unique(raw, return_inverse=True)
        )
        index, chans, codes, fits, part_codes = [], [], [], [], []
        for name, channel in channels.items():
            several = channel.n_groups > 1
            g = channel.group_codes(raw if several else None, len(frame))
            reports = frame[name].to_numpy().astype(np.intp)
            fit = estimate_channel(channel, reports, raw if several else None)
            index.append(columns.index(name))
            chans.append(channel)
            codes.append(g)
            fits.append(np.asarray(fit.params, dtype=np.float64))
            part_codes.append(
                channel.group_codes(labels, labels.size)
                if several
                else np.zeros(labels.size, np.intp)
            )
        return _Grouped(index, chans, codes, fits, np.asarray(parts, np.intp), part_codes)

    def correct(
        self,
        r: _Array,
        values: _Array,
        weights: _Array,
        c: _Array,
        d: _Array,
        randomized: NDArray[np.bool_],
        refit: bool,
    ) -> _Array:
        """Replace the pairs involving a group model in ``r`` (B, p, p) by RRcor's
        group-averaged correlations, the group models refitted to each replicate's
        reports with ``refit`` (a bootstrap), else at their fit on all rows."""
        Bn, p = weights.shape[0], values.shape[1]
        S = int(self.parts.max()) + 1
        mean = weights @ values / weights.sum(axis=1, keepdims=True)
        pi = np.where(randomized, (mean - c) / d, 0.5)
        cs = np.broadcast_to(c, (Bn, S, p)).copy()
        ds = np.broadcast_to(d, (Bn, S, p)).copy()
        flags = randomized.copy()
        for j, channel, codes, fit, part_codes in zip(
            self.index, self.channels, self.codes, self.fits, self.part_codes, strict=True
        ):
            flags[j] = True
            if not refit:
                x = np.broadcast_to(fit, (Bn, fit.size))
            else:
                onehot = np.zeros((values.shape[0], channel.n_groups * 2))
                onehot[np.arange(values.shape[0]), codes * 2 + values[:, j].astype(np.intp)] = 1
                counts = (weights @ onehot).reshape(Bn, channel.n_groups, 2)
                x = np.array([_maximise(channel, k, fit).x for k in counts])
            for b in range(Bn):
                A, Bm, _, _ = channel.coefficients(x[b, 1:])
                cs[b, :, j] = A[part_codes, 1]
                ds[b, :, j] = Bm[part_codes, 1]
            pi[:, j] = x[:, 0]
        g = _grouped_correlations(values, weights, self.parts, cs, ds, pi, flags)
        touched = np.zeros(p, dtype=bool)
        touched[self.index] = True
        pairs = touched[:, None] | touched[None, :]
        out = np.where(pairs[None], g, r)
        idx = np.arange(p)
        out[:, idx, idx] = 1.0
        return np.asarray(out)
