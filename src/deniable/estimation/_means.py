"""Means and bucket histograms of numeric values collected under local DP.

The reports of a mean mechanism (:mod:`deniable.mechanisms`) are unbiased for
each value once debiased, so their average is unbiased for the population mean, and the
sample variance of the debiased reports estimates its variance (Duchi, Jordan &
Wainwright 2018; Wang et al. 2019; Ding, Kulkarni & Yekhanin 2017). The sufficient
statistic is a mergeable :class:`MeanTally` (count, sum, sum of squares).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._validation import JSON, check_confidence_level
from ..errors import ReportValidationError
from ..mechanisms import DBitFlip, DBitFlipReports, NumericMechanism
from ..tallies import DBitFlipTally, MeanTally
from ._estimates import ConfidenceInterval, EstimateResult
from ._normal_theory import normal_only_interval

if TYPE_CHECKING:
    from ._estimates import PrevalenceEstimate

__all__ = [
    "MEAN_INTERVAL_METHODS",
    "DBitFlipTally",
    "HistogramEstimate",
    "MeanEstimate",
    "MeanTally",
    "RangeMean",
    "estimate_histogram",
    "estimate_mean",
    "histogram_variance",
]

MEAN_INTERVAL_METHODS = ("normal", "hoeffding")


@dataclass(frozen=True)
class MeanEstimate(EstimateResult):
    """An unbiased mean with its standard error (the result vocabulary).

    Attributes
    ----------
    mechanism : NumericMechanism
    tally : MeanTally
    estimate : float
        Unbiased estimate of the mean (never clipped to ``[low, high]``).
    std_error : float
        ``sqrt(s^2 / n)``, with ``s^2`` the sample variance of the debiased reports.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import MeanEstimate, estimate_mean
    >>> from deniable.mechanisms import DuchiMean
    >>> duchi = DuchiMean(1.0, low=0.0, high=10.0)
    >>> reports = duchi.randomize(np.full(20_000, 4.0), np.random.default_rng(0))
    >>> result = estimate_mean(duchi, reports)
    >>> isinstance(result, MeanEstimate), bool(abs(result.estimate - 4.0) < 4 * result.std_error)
    (True, True)
    """

    mechanism: NumericMechanism
    tally: MeanTally
    estimate: float
    std_error: float

    @property
    def labels(self) -> list[str]:
        """``["mean"]``."""
        return ["mean"]

    @property
    def n(self) -> int:
        """Number of reports."""
        return self.tally.n

    def _title(self) -> str:
        return f"{self.mechanism!r}: mean from n = {self.n} reports"

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[float]:
        """Interval for the mean (floats).

        Parameters
        ----------
        confidence_level : float in (0, 1), default 0.95
        method : {"normal", "hoeffding"}, default "normal"
            ``normal``: estimate +- z SE (asymptotic, covers to within 1% from a few
            hundred reports; docs/oracles.md). ``hoeffding``: Hoeffding's (1963) bound
            for the mean of independent reports inside :attr:`report_bounds
            <deniable.mechanisms._numeric.NumericMechanism.report_bounds>`, valid for
            every n (wider).

        Raises
        ------
        ValueError
            For an unknown method or a confidence level outside (0, 1).
        """
        if method != "hoeffding":
            if method not in (None, *MEAN_INTERVAL_METHODS):
                raise ValueError(f"method must be one of {MEAN_INTERVAL_METHODS}, got {method!r}")
            low, high = normal_only_interval(self.estimate, self.std_error, confidence_level, None)
            return ConfidenceInterval(float(low), float(high))
        level = check_confidence_level(confidence_level)
        lo, hi = self.mechanism.report_bounds
        half = (hi - lo) * math.sqrt(math.log(2 / (1 - level)) / (2 * max(self.n, 1)))
        return ConfidenceInterval(self.estimate - half, self.estimate + half)


def estimate_mean(mechanism: NumericMechanism, reports: Any) -> MeanEstimate:
    """Unbiased mean of the values behind ``reports``.

    Parameters
    ----------
    mechanism : NumericMechanism
        :class:`~deniable.mechanisms.DuchiMean`, ``Piecewise``, ``HybridMean``
        or ``OneBitMean``.
    reports : array, shape (n,), or MeanTally
        The mechanism's reports (bits or floats), or their tally.

    Returns
    -------
    MeanEstimate
        The mean in the values' units and its standard error (floats).

    Raises
    ------
    ReportValidationError
        For malformed reports or an empty tally.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import estimate_mean
    >>> from deniable.mechanisms import DuchiMean
    >>> duchi = DuchiMean(1.0, low=0.0, high=10.0)
    >>> reports = duchi.randomize(np.full(20_000, 4.0), np.random.default_rng(0))
    >>> round(estimate_mean(duchi, reports).estimate, 1)
    3.9
    """
    tally = (
        reports
        if isinstance(reports, MeanTally)
        else MeanTally.from_values(mechanism.debias(reports))
    )
    if tally.n < 1:
        raise ReportValidationError("need at least one report to estimate a mean")
    mean = tally.total / tally.n
    if tally.n > 1:
        s2 = max(tally.total_sq - tally.n * mean * mean, 0.0) / (tally.n - 1)
    else:
        s2 = math.inf
    return MeanEstimate(mechanism, tally, float(mean), float(math.sqrt(s2 / tally.n)))


@dataclass(frozen=True)
class RangeMean(EstimateResult):
    """The mean of a value in ``[low, high]`` from the estimated share of its "high" report.

    A numeric question randomizes a value ``x`` in ``[low, high]`` to one bit that is
    1 with probability ``(x - low) / (high - low)`` (Duchi, Jordan & Wainwright 2018)
    and sends the bit through a binary design; the mean is ``low + (high - low) p``
    with ``p`` the design's unbiased estimate of the share of 1s, and its standard
    error and interval ends are mapped the same way (a linear map keeps unbiasedness
    and coverage).

    Attributes
    ----------
    share : PrevalenceEstimate
        The binary design's estimate; category 1 is the share of 1s.
    low, high : float
        The value range, in the question's units (``low < high``).
    unit : str
        The unit's name ("" when none).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.estimation import RangeMean
    >>> share = estimate(Warner(p=0.8), np.array([1] * 70 + [0] * 30))
    >>> mean = RangeMean(share, low=0.0, high=40.0, unit="hours")
    >>> round(mean.estimate, 2), mean.unit
    (33.33, 'hours')
    """

    share: PrevalenceEstimate
    low: float
    high: float
    unit: str = ""

    def _to_units(self, value: float) -> float:
        return self.low + (self.high - self.low) * float(value)

    @property
    def estimate(self) -> float:
        """The unbiased mean, in the question's units (not clipped to the range)."""
        return self._to_units(self.share.estimate[1])

    @property
    def std_error(self) -> float:
        """``(high - low)`` times the standard error of the share."""
        return (self.high - self.low) * float(self.share.std_error[1])

    @property
    def labels(self) -> list[str]:
        """``["mean"]``."""
        return ["mean"]

    @property
    def n(self) -> int:
        """Number of reports."""
        return int(self.share.n)

    @property
    def warnings(self) -> list[str]:
        """The share's warnings (for example an estimate outside ``[0, 1]``)."""
        return list(self.share.warnings)

    @property
    def warned(self) -> list[tuple[type[Warning], str]]:
        """The share's warnings with their categories (:mod:`deniable.errors`)."""
        return list(self.share.warned)

    @property
    def default_interval_method(self) -> str:
        """The share's default interval method."""
        return str(self.share.default_interval_method)

    def to_dict(self, confidence_level: float = 0.95, method: str | None = None) -> dict[str, JSON]:
        """The one JSON shape (:meth:`EstimateResult.to_dict`) with ``range`` and ``unit``."""
        return super().to_dict(confidence_level, method) | {
            "range": [self.low, self.high],
            "unit": self.unit,
        }

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[float]:
        """The share's interval (any of its methods) mapped to the question's units.

        Raises
        ------
        ValueError
            For an unknown method or a confidence level outside (0, 1).
        """
        ci = self.share.confidence_interval(confidence_level, method)
        return ConfidenceInterval(self._to_units(ci.low[1]), self._to_units(ci.high[1]))


@dataclass(frozen=True)
class HistogramEstimate(EstimateResult):
    """Unbiased bucket shares from dBitFlip reports, with standard errors.

    Attributes
    ----------
    mechanism : DBitFlip
    tally : DBitFlipTally
    estimate : ndarray, shape (k,), float64
        Unbiased share of each bucket (never clipped).
    std_error : ndarray, shape (k,), float64

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import HistogramEstimate, estimate_histogram
    >>> from deniable.mechanisms import DBitFlip
    >>> oracle = DBitFlip(k=10, epsilon=1.0)
    >>> reports = oracle.randomize(np.arange(5000) % 10, np.random.default_rng(0))
    >>> result = estimate_histogram(oracle, reports)
    >>> isinstance(result, HistogramEstimate), result.estimate.shape
    (True, (10,))
    """

    mechanism: DBitFlip
    tally: DBitFlipTally
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]

    @property
    def labels(self) -> list[str]:
        """``"bucket 0"``, ``"bucket 1"``, ..."""
        return [f"bucket {t}" for t in range(self.mechanism.k)]

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[NDArray[np.float64]]:
        """Normal intervals per bucket, arrays of shape (k,) (method must be ``normal``)."""
        return ConfidenceInterval(
            *normal_only_interval(self.estimate, self.std_error, confidence_level, method)
        )


def histogram_variance(oracle: DBitFlip, truths: NDArray[np.int64]) -> NDArray[np.float64]:
    """Exact variance of :func:`estimate_histogram`'s shares given the true codes, (k,)."""
    p_out, p_in = oracle._p()
    e = math.exp(oracle.bit_epsilon)
    w1, w0 = e / (e - 1), -1 / (e - 1)
    counts = np.bincount(np.asarray(truths), minlength=oracle.k).astype(np.float64)
    n, f = counts.sum(), oracle.d / oracle.k
    second_in = f * (p_in * w1**2 + (1 - p_in) * w0**2)
    second_out = f * (p_out * w1**2 + (1 - p_out) * w0**2)
    var_sum = counts * (second_in - f**2) + (n - counts) * second_out
    return np.asarray(var_sum / (n * f) ** 2, dtype=np.float64)


def estimate_histogram(
    oracle: DBitFlip, reports: DBitFlipReports | DBitFlipTally
) -> HistogramEstimate:
    """Unbiased bucket shares (Ding et al. 2017) and their standard errors.

    ``share_t = k / (n d) sum_{reports sampling t} (b (e^b + 1) - 1) / (e^b - 1)``, whose
    variance is estimated by the sample variance of the per-report terms (0 for reports
    that did not sample ``t``).

    Parameters
    ----------
    oracle : DBitFlip
        The mechanism that drew the reports.
    reports : DBitFlipReports or DBitFlipTally
        Its reports (each respondent's sampled buckets and bits), or their tally.

    Returns
    -------
    HistogramEstimate
        The ``k`` bucket shares (float64, shape (k,)) and their standard errors.

    Raises
    ------
    ReportValidationError
        For malformed reports or fewer than two reports.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import estimate_histogram
    >>> from deniable.mechanisms import DBitFlip
    >>> oracle = DBitFlip(k=10, epsilon=1.0)
    >>> reports = oracle.randomize(np.arange(5000) % 10, np.random.default_rng(0))
    >>> estimate_histogram(oracle, reports).estimate.shape
    (10,)
    """
    tally = (
        reports
        if isinstance(reports, DBitFlipTally)
        else DBitFlipTally.from_reports(oracle, reports)
    )
    if tally.n < 2:
        raise ReportValidationError("need at least two reports to estimate a histogram")
    e = math.exp(oracle.bit_epsilon)
    sampled, ones = tally.sampled.astype(np.float64), tally.ones.astype(np.float64)
    total = (ones * (e + 1) - sampled) / (e - 1)
    total_sq = (ones * e**2 + (sampled - ones)) / (e - 1) ** 2
    scale = oracle.k / oracle.d
    n = tally.n
    s2 = np.maximum(total_sq - total**2 / n, 0.0) / (n - 1)
    return HistogramEstimate(oracle, tally, scale * total / n, scale * np.sqrt(s2 / n))
