"""Timing: does how long an encoder takes tell which answer it randomized?

A script on the host page, or a caller in the same process, can time each call. Each
target's encoder is called on one input at a time, ``x0`` and ``x1`` in a shuffled order
(so that drift, caches and the collector fall on both alike), after a warm-up; the
single-call times are then a classifier of the answer, whose area under the ROC curve is
the Mann-Whitney statistic ``U / (n0 n1)`` (Hanley & McNeil 1982). A randomizer leaks
nothing by its timing when the best classifier's AUC, ``max(AUC, 1 - AUC)``, is at most
0.52, or when the median times differ by under 1%.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._auditor import kernels
from ._targets import AuditTarget, Encoder, targets_for

__all__ = ["TimingCheck", "timing_check"]

#: The largest AUC of a timing classifier that counts as no leak.
MAX_AUC = 0.52
#: The relative difference of the median times that counts as no leak.
MAX_MEDIAN_GAP = 0.01


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
        Calls per answer.

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

    @property
    def median_gap(self) -> float:
        """``|m0 - m1| / min(m0, m1)``."""
        m0, m1 = self.medians_ns
        return abs(m0 - m1) / max(min(m0, m1), 1.0)

    @property
    def passes(self) -> bool:
        """AUC at most :data:`MAX_AUC`, or medians within :data:`MAX_MEDIAN_GAP`."""
        return self.auc <= MAX_AUC or self.median_gap < MAX_MEDIAN_GAP

    def to_dict(self) -> dict[str, Any]:
        """The fields, ``median_gap`` and ``passes``, JSON-ready."""
        return asdict(self) | {"median_gap": self.median_gap, "passes": self.passes}


def timing_check(
    mechanism: Any,
    *,
    calls: int = 20_000,
    runtime: str | None = None,
    encode: Encoder | None = None,
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
    encode : callable, optional
        In place of the shipped encoder (not for a panel).

    Returns
    -------
    list of TimingCheck
        One per target.

    Raises
    ------
    ValueError
        For ``calls`` out of range, an unknown runtime, or ``encode`` with a panel.

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
        return [_time(target, encode or target.encode, order, calls) for target in targets]


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
