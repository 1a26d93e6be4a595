"""Timing: does how long an encoder takes tell which answer it randomized?

A script on the host page, or a caller in the same process, can time each call. Each
target's encoder is called on one input at a time, ``x0`` and ``x1`` in a shuffled order
(so that drift, caches and the collector fall on both alike), after a warm-up; the
single-call times are then a classifier of the answer, whose area under the ROC curve is
the Mann-Whitney statistic ``U / (n0 n1)`` (Hanley & McNeil 1982). A randomizer leaks
nothing by its timing when the best classifier's AUC, ``max(AUC, 1 - AUC)``, is at most
0.52, or when the median times differ by under 1%.

Where one call is too short for the clock (a browser page), calls are timed in batches,
and the batches in pairs, one on each answer in a random order, so that what drifts
(load, frequency, the collector) falls on both of a pair alike. The relative difference
of the cost of a call is then the 20%-trimmed mean of the pairs' log ratios, with the
Tukey-McLaughlin standard error (Tukey & McLaughlin 1963; Wilcox 2012, sec. 4.3): a
trimmed mean, because a pause of the collector or of the machine lands on one batch of a
pair and not the other. A leak is *confirmed* when the interval at 99.9% lies wholly
beyond 1%, as an epsilon is exceeded only when its lower bound is above the claim.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._auditor import kernels
from ._targets import AuditTarget, Encoder, targets_for

__all__ = ["TimingCheck", "paired_gap", "timing_check"]

#: The largest AUC of a timing classifier that counts as no leak.
MAX_AUC = 0.52
#: The relative difference of the median times that counts as no leak.
MAX_MEDIAN_GAP = 0.01
#: The confidence of the interval of a paired relative difference (batches of calls).
GAP_CONFIDENCE = 0.999
#: The share trimmed from each end of the pairs' log ratios.
TRIM = 0.2


@dataclass(frozen=True)
class TimingCheck:
    """Single-call times of an encoder on two answers.

    Attributes
    ----------
    target : str
    auc : float in [0.5, 1]
        The best timing classifier's area under the ROC curve.
    medians_ns : tuple of (float, float)
        Median time of one call on ``x0`` and on ``x1``, in nanoseconds.
    calls : int
        Calls per answer (batches per answer, for a batch check).
    gap_interval : tuple of (float, float), optional
        For a batch check: the interval, at :data:`GAP_CONFIDENCE`, of the relative
        difference of a call's cost on ``x1`` and on ``x0`` (a log ratio; 0.01 is about
        1%), from pairs of batches.

    Examples
    --------
    >>> from deniable import Warner
    >>> check = timing_check(Warner(p=0.75), calls=2_000)[0]
    >>> 0.5 <= check.auc <= 1.0
    True
    """

    target: str
    auc: float
    medians_ns: tuple[float, float]
    calls: int
    gap_interval: tuple[float, float] | None = None

    @property
    def median_gap(self) -> float:
        """``|m0 - m1| / min(m0, m1)``."""
        m0, m1 = self.medians_ns
        return abs(m0 - m1) / max(min(m0, m1), 1.0)

    @property
    def passes(self) -> bool:
        """AUC at most :data:`MAX_AUC`, or medians within :data:`MAX_MEDIAN_GAP`; for a
        batch check, a gap beyond :data:`MAX_MEDIAN_GAP` not confirmed by its interval."""
        if self.gap_interval is not None:
            low, high = self.gap_interval
            return low <= MAX_MEDIAN_GAP and high >= -MAX_MEDIAN_GAP
        return self.auc <= MAX_AUC or self.median_gap < MAX_MEDIAN_GAP

    def to_dict(self) -> dict[str, Any]:
        """The fields, ``median_gap`` and ``passes``, JSON-ready."""
        return asdict(self) | {"median_gap": self.median_gap, "passes": self.passes}


def timing_check(
    mechanism: Any,
    *,
    calls: int = 20_000,
    runtime: str | None = None,
    encode: Encoder | Sequence[Encoder] | None = None,
) -> list[TimingCheck]:
    """Time single calls of an encoder on each of two answers.

    Parameters
    ----------
    mechanism : Design, FrequencyOracle, NumericMechanism or TwoLayerDesign
    calls : int, default 20,000
        Calls per answer, 100..10^7: under no leak the AUC's standard deviation is
        ``sqrt((2 calls + 1) / (12 calls^2))``, 0.0029 at 20,000, so 0.52 is 7 of them.
    runtime : {"numpy", "numba"}, optional
        The kernels to time; default: whichever the machine uses.
    encode : callable or sequence of callables, optional
        In place of the shipped encoder; one per target for a panel or RAPPOR.

    Returns
    -------
    list of TimingCheck
        One per target.

    Raises
    ------
    ValueError
        For ``calls`` out of range, an unknown runtime, or an ``encode`` that is not one per target.

    Examples
    --------
    >>> from deniable.mechanisms import KaryRR
    >>> [c.calls for c in timing_check(KaryRR(k=3, epsilon=1.0), calls=500)]
    [500]
    """
    if not (isinstance(calls, int) and 100 <= calls <= 10**7):
        raise ValueError(f"calls must be an integer in 100..10^7, got {calls!r}")
    targets = targets_for(mechanism, encode)
    order = np.random.default_rng(64).permutation(np.repeat([0, 1], calls))  # not secret
    with kernels(runtime):
        return [_time(target, target.encode, order, calls) for target in targets]


def paired_gap(
    first: NDArray[np.float64], second: NDArray[np.float64], confidence: float = GAP_CONFIDENCE
) -> tuple[float, float, float]:
    """The relative difference of ``second`` from ``first``, timed in pairs.

    Parameters
    ----------
    first, second : ndarray of float64, shape (pairs,)
        Positive times (any unit) of the two batches of each pair; at least 20 pairs.
    confidence : float in (0, 1), default :data:`GAP_CONFIDENCE`

    Returns
    -------
    estimate, low, high : float
        The 20%-trimmed mean of ``log(second / first)`` and its two-sided interval from
        the Tukey-McLaughlin standard error (the winsorized standard deviation over
        ``(1 - 2 * 0.2) * sqrt(pairs)``) with Student's t on ``pairs - 2 g - 1`` degrees
        of freedom, ``g`` the pairs trimmed from each end (Wilcox 2012, sec. 4.3).

    Raises
    ------
    ValueError
        For unequal shapes, fewer than 20 pairs, a time not positive and finite, or a
        confidence outside (0, 1).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> base = rng.lognormal(0.0, 0.1, 400)
    >>> est, low, high = paired_gap(base, base * 1.05 * rng.lognormal(0.0, 0.01, 400))
    >>> bool(low < np.log(1.05) < high)
    True
    """
    from scipy.stats import t as student

    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 20:
        raise ValueError(
            f"first and second must be two arrays of 20+ pairs, got {a.shape}, {b.shape}"
        )
    if not (np.all(np.isfinite(a) & (a > 0)) and np.all(np.isfinite(b) & (b > 0))):
        raise ValueError("times must be positive and finite")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    ratios = np.sort(np.log(b) - np.log(a))
    g = int(TRIM * ratios.size)
    estimate = float(ratios[g : ratios.size - g].mean())
    winsorized = np.clip(ratios, ratios[g], ratios[ratios.size - 1 - g])
    se = float(winsorized.std(ddof=1)) / ((1.0 - 2.0 * TRIM) * np.sqrt(ratios.size))
    half = float(student.ppf(0.5 + confidence / 2.0, ratios.size - 2 * g - 1)) * se
    return estimate, estimate - half, estimate + half


def _time(target: AuditTarget, run: Encoder, order: Any, calls: int) -> TimingCheck:
    """Time ``run`` once per entry of ``order`` (0: ``x0``, 1: ``x1``)."""
    from scipy.stats import mannwhitneyu

    inputs = (target.inputs(target.x0, 1), target.inputs(target.x1, 1))
    for which in order[:200]:  # warm-up: caches, compiled kernels
        run(inputs[which], None)
    times = np.empty(order.size, dtype=np.int64)
    clock = time.perf_counter_ns
    for i, which in enumerate(order):
        start = clock()
        run(inputs[which], None)
        times[i] = clock() - start
    t0, t1 = times[order == 0], times[order == 1]
    u = float(mannwhitneyu(t0, t1).statistic) / (t0.size * t1.size)
    medians = (float(np.median(t0)), float(np.median(t1)))
    return TimingCheck(target.name, max(u, 1.0 - u), medians, calls)
