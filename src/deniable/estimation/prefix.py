"""Finding heavy hitters from PEM reports, level by level (Wang et al. 2021).

At each level the frequency of every candidate prefix is estimated from that level's
reports by local hashing's unbiased estimator (Wang, Blocki, Li & Jha 2017),
``f = (C / n_l - q*) / (p* - q*)`` with ``C`` the candidate's support count among the
``n_l`` reports of the level, and standard error ``sqrt(s (1 - s) / n_l) / (p* - q*)``
with ``s = C / n_l`` (the level's reporters are a random sample of all respondents).
A prefix is kept while its upper confidence bound ``f + z_(1 - miss_rate) SE`` reaches
the threshold, so a value whose frequency is exactly the threshold is lost at one level
with probability at most ``miss_rate`` (its prefixes are at least as frequent). The
values returned are the last level's candidates that pass the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ReportValidationError
from ..mechanisms.prefix import PrefixExtension
from ..validation import check_probability
from .common import normal_only_interval, z_quantile
from .results import ConfidenceInterval, EstimateResult

__all__ = [
    "MAX_SURVIVORS",
    "PrefixHeavyHitters",
    "find_heavy_hitters",
]

#: Most candidates kept from one level to the next (the largest estimates).
MAX_SURVIVORS = 4096


@dataclass(frozen=True)
class PrefixHeavyHitters(EstimateResult):
    """Frequent values found without a candidate list, largest estimate first.

    Attributes
    ----------
    values : list of str
    estimate : ndarray, shape (h,), float64
        Unbiased frequency estimates (from the last level's reports; never clipped).
    std_error : ndarray, shape (h,), float64
    threshold : float in (0, 1)
        The frequency asked for.
    miss_rate : float in (0, 1)
        The chance of losing a value of exactly ``threshold`` at one level.
    reports_per_level : ndarray, shape (levels,), int64
    candidates_per_level : ndarray, shape (levels,), int64
    """

    values: list[str]
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    threshold: float
    miss_rate: float
    reports_per_level: NDArray[np.int64]
    candidates_per_level: NDArray[np.int64]

    @property
    def labels(self) -> list[str]:
        """The values found."""
        return list(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[NDArray[np.float64]]:
        """Wald intervals of the values' frequencies, clipped to [0, 1] (``normal`` only)."""
        return ConfidenceInterval(
            *normal_only_interval(self.estimate, self.std_error, confidence_level, method, True)
        )


def _estimate_level(
    pem: PrefixExtension, reports: NDArray[Any], level: int, candidates: NDArray[np.uint64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    from ..mechanisms._kernels import olh_candidate_counts

    oracle = pem.oracles[level]
    n = reports.size
    if n == 0:
        return np.zeros(candidates.size), np.full(candidates.size, np.inf)
    counts = olh_candidate_counts(*oracle._kernel_args(reports), candidates)
    share = counts / n
    gap = oracle.p_star - oracle.q_star
    estimate = (share - oracle.q_star) / gap
    std_error = np.sqrt(np.maximum(share * (1 - share), 1e-300) / n) / gap
    return estimate, std_error


def _extensions(pem: PrefixExtension, prefixes: NDArray[np.uint64], level: int) -> NDArray[Any]:
    """Every extension of ``prefixes`` (codes at ``level - 1``) to ``level``'s length.

    A prefix that ended (its last symbol is the padding 0) extends only by padding.
    """
    step = pem.lengths[level] - pem.lengths[level - 1]
    width = pem.base**step
    tails = np.arange(width, dtype=np.uint64)
    ended = prefixes % np.uint64(pem.base) == 0
    full = prefixes[~ended, None] * np.uint64(width) + tails[None, :]
    if step > 1:  # within an extension, no symbol may follow a padding 0
        digits = (
            tails[:, None] // (np.uint64(pem.base) ** np.arange(step, dtype=np.uint64))
        ) % np.uint64(pem.base)
        valid = np.ones(width, bool)
        for j in range(1, step):  # digit j (from the right) padding => digit j - 1 padding
            valid &= ~((digits[:, j] == 0) & (digits[:, j - 1] != 0))
        full = full[:, valid]
    closed = prefixes[ended] * np.uint64(width)
    return np.concatenate([full.ravel(), closed])


def find_heavy_hitters(
    pem: PrefixExtension, reports: Any, threshold: float = 0.01, miss_rate: float = 0.05
) -> PrefixHeavyHitters:
    """Values whose frequency may reach ``threshold``, found level by level.

    Parameters
    ----------
    pem : PrefixExtension
    reports : ndarray of ``PEM_DTYPE``, shape (n,)
    threshold : float in (0, 1), default 0.01
        Frequency (share of respondents) a value must have to be sought.
    miss_rate : float in (0, 1), default 0.05
        Chance of losing, at one level, a value whose frequency is exactly
        ``threshold``; lower values keep more candidates (and return more values just
        below the threshold).

    Returns
    -------
    PrefixHeavyHitters

    Raises
    ------
    ValueError
        For ``threshold`` or ``miss_rate`` outside (0, 1).
    ReportValidationError
        For malformed reports.
    """
    threshold = check_probability("threshold", threshold)
    miss_rate = check_probability("miss_rate", miss_rate)
    if not 0 < threshold < 1 or not 0 < miss_rate < 1:
        raise ValueError("threshold and miss_rate must be in (0, 1)")
    arr = pem.check_reports(reports)
    if arr.size == 0:
        raise ReportValidationError("no reports")
    z = z_quantile(1 - 2 * miss_rate)  # one-sided: z_(1 - miss_rate)
    level_of = arr["level"]
    candidates = np.arange(pem.base ** pem.lengths[0], dtype=np.uint64)
    n_level, n_candidates = [], []
    estimate = std_error = np.zeros(0)
    for level in range(pem.levels):
        if level > 0:
            candidates = _extensions(pem, candidates, level)
        level_reports = arr[level_of == level]
        n_level.append(level_reports.size)
        n_candidates.append(candidates.size)
        estimate, std_error = _estimate_level(pem, level_reports, level, candidates)
        keep = np.nonzero(estimate + z * std_error >= threshold)[0]
        keep = keep[np.argsort(-estimate[keep], kind="stable")][:MAX_SURVIVORS]
        candidates, estimate, std_error = candidates[keep], estimate[keep], std_error[keep]
    values = [pem.decode(int(c)) for c in candidates]
    return PrefixHeavyHitters(
        values,
        estimate,
        std_error,
        threshold,
        miss_rate,
        np.array(n_level, dtype=np.int64),
        np.array(n_candidates, dtype=np.int64),
    )
