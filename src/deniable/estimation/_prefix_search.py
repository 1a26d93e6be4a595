"""Finding heavy hitters from PEM reports, level by level (Wang et al. 2021).

At each level the frequency of every candidate prefix is estimated from that level's
reports by local hashing's unbiased estimator (Wang, Blocki, Li & Jha 2017),
``f = (C / n_l - q*) / (p* - q*)`` with ``C`` the candidate's support count among the
``n_l`` reports of the level, and standard error ``sqrt(s (1 - s) / n_l) / (p* - q*)``
with ``s = C / n_l`` (the level's reporters are a random sample of all respondents).

*Pruning* (generous): a prefix is kept while its upper confidence bound
``f + z_(1 - miss_rate) SE`` reaches the threshold, so a value whose frequency is
exactly the threshold is lost at one level with probability at most ``miss_rate``
(its prefixes are at least as frequent). The survivors are bounded by theory: the
prefixes of one level have frequencies summing to 1, so at most ``1 / t`` reach ``t``;
more than ``SURVIVOR_FACTOR / t`` survivors are noise, and the search keeps the largest
``SURVIVOR_FACTOR / t`` estimates (with a warning that names the detection limit) or
stops with :class:`~deniable.errors.DetectionLimitError`.

*Returning* (controlled): a last-level candidate is returned only when the exact
binomial test of ``frequency <= t / 2`` rejects at level ``false_discoveries / m``
(Bonferroni over the ``m`` candidates of the last level): under that null the support
count is a sum of independent Bernoulli variables of mean at most
``s0 = q* + (p* - q*) t / 2``, whose upper tail beyond ``n s0 + 1`` is at most the
binomial one (Hoeffding 1956, "On the distribution of the number of successes in
independent trials"). So the expected number of values returned whose frequency is
below half the threshold (false discoveries) is at most ``false_discoveries``, whatever
the epsilon and however many candidates the pruning let through; the candidates come
from other levels' reports, independent of the last level's.

*Top-k mode* keeps the ``SURVIVOR_FACTOR k`` largest estimates per level and returns
the ``k`` largest of the last level (Wang et al. 2021's original use of PEM).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ..errors import DetectionLimitError, ReportValidationError
from ..mechanisms._prefix import PrefixExtension
from ..validation import check_integer, check_probability
from ._estimates import ConfidenceInterval, EstimateResult
from ._normal_theory import normal_only_interval

__all__ = [
    "SURVIVOR_FACTOR",
    "FoundModel",
    "LevelCounter",
    "PrefixHeavyHitters",
    "find_heavy_hitters",
    "level_counts",
    "limit_from_model",
    "pem_found_model",
    "search_levels",
]

#: Survivors kept from one level to the next: at most ``SURVIVOR_FACTOR / threshold``
#: (or ``SURVIVOR_FACTOR * top_k``).
SURVIVOR_FACTOR = 4


@dataclass(frozen=True)
class PrefixHeavyHitters(EstimateResult):
    """Frequent values found without a candidate list, largest estimate first.

    Attributes
    ----------
    values : list of str
    estimate : ndarray, shape (h,), float64
        Unbiased frequency estimates (from the last level's reports; byte-PEM: from
        every level's after the value ended; never clipped).
    std_error : ndarray, shape (h,), float64
    threshold : float in (0, 1)
        The frequency asked for (NaN in top-k mode).
    miss_rate : float in (0, 1)
        The chance of losing a value of exactly ``threshold`` at one level's pruning.
    reports_per_level : ndarray, shape (levels,), int64
    candidates_per_level : ndarray, shape (levels,), int64
    pvalue : ndarray, shape (h,), float64
        Exact binomial p-value of "frequency <= threshold / 2" (of "frequency = 0" in
        top-k mode) for each value returned.
    false_discoveries : float in (0, 1)
        Bound on the expected number of values returned below half the threshold.
    top_k : int or None
        The number of values asked for in top-k mode.
    warnings : list of str
        Levels whose survivors were cut to the largest estimates, with the detection
        limit.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import find_heavy_hitters
    >>> from deniable.mechanisms import PrefixExtension
    >>> pem = PrefixExtension(4.0, max_length=3)
    >>> words = np.array(["abc"] * 3000 + ["xyz"] * 2000 + ["q"] * 5000)
    >>> reports = pem.randomize(words, np.random.default_rng(0))
    >>> find_heavy_hitters(pem, reports, threshold=0.1).values
    ['q', 'abc', 'xyz']
    """

    values: list[str]
    estimate: NDArray[np.float64]
    std_error: NDArray[np.float64]
    threshold: float
    miss_rate: float
    reports_per_level: NDArray[np.int64]
    candidates_per_level: NDArray[np.int64]
    pvalue: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    false_discoveries: float = 0.05
    top_k: int | None = None
    warnings: list[str] = field(default_factory=list)

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
    pem: Any, counts: NDArray[np.int64], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(estimate, std_error)`` of the candidates at one level from their support
    counts among the level's ``n`` reports."""
    if n == 0:
        return np.zeros(counts.size), np.full(counts.size, np.inf)
    _, _, _, p_star, q_star = pem._search_shape()
    share = counts / n
    gap = p_star - q_star
    estimate = (share - q_star) / gap
    std_error = np.sqrt(np.maximum(share * (1 - share), 1e-300) / n) / gap
    return estimate, std_error


def level_counts(
    pem: PrefixExtension, reports: NDArray[Any], level: int, candidates: NDArray[np.uint64]
) -> tuple[NDArray[np.int64], int]:
    """Support counts of ``candidates`` (uint64 prefix codes of ``level``'s length,
    shape (m,)) among the reports of ``level``, and how many reports that level has.

    The unit of work of :func:`find_heavy_hitters`; integer counts, so partial counts
    over any split of the reports (files, Spark tasks) add up to the same.
    """
    from ..mechanisms._kernels import olh_candidate_counts

    mine = reports[reports["level"] == level]
    if mine.size == 0:
        return np.zeros(candidates.size, dtype=np.int64), 0
    oracle = pem.oracles[level]
    return olh_candidate_counts(*oracle._kernel_args(mine), candidates), int(mine.size)


#: ``count(level, candidates) -> (support counts (m,) int64, reports of the level)``.
LevelCounter = Callable[[int, NDArray[np.uint64]], tuple[NDArray[np.int64], int]]


def _extension_width(pem: PrefixExtension, level: int) -> int:
    return int(pem.base ** (pem.lengths[level] - pem.lengths[level - 1]))


def _extensions(pem: PrefixExtension, prefixes: NDArray[np.uint64], level: int) -> NDArray[Any]:
    """Every extension of ``prefixes`` (codes at ``level - 1``) to ``level``'s length.

    A prefix that ended (its last symbol is the padding 0) extends only by padding.
    """
    width = _extension_width(pem, level)
    step = pem.lengths[level] - pem.lengths[level - 1]
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


def _survivor_cap(threshold: float, top_k: int | None, max_survivors: int | None) -> int:
    if max_survivors is not None:
        return check_integer("max_survivors", max_survivors, minimum=1)
    if top_k is not None:
        return SURVIVOR_FACTOR * top_k
    return math.ceil(SURVIVOR_FACTOR / threshold)


def _found_probability(
    pem: Any,
    n: float,
    f: float,
    threshold: float,
    false_discoveries: float,
    miss_rate: float,
    cap: int,
) -> float:
    """Normal approximation of Pr(a value of frequency ``f`` is returned): it survives
    every level's pruning (the upper bound reaches the threshold and, where more than
    ``cap`` prefixes are tested, its estimate beats the cap-th largest of the null
    ones) and passes the last level's Bonferroni test of ``f <= threshold / 2``."""
    levels, tested, widths, p_star, q_star = pem._search_shape()
    n_level = n / levels
    gap, q = float(p_star - q_star), float(q_star)

    def se(freq: float) -> float:
        s = q + gap * freq
        return math.sqrt(max(s * (1 - s), 1e-300) / n_level) / gap

    z_miss = float(special.ndtri(1 - miss_rate))
    prob = 1.0
    for level in range(levels - 1):
        null_se = se(0.0)
        bar = threshold - z_miss * se(threshold)
        if tested > cap:  # the cap-th largest of the null estimates
            bar = max(bar, null_se * float(special.ndtri(1 - cap / tested)))
        prob *= float(special.ndtr((f - bar) / se(f)))
        tested = float(cap * widths[level + 1])
    z_test = float(special.ndtri(1 - false_discoveries / max(tested, 1.0)))
    s0 = q + gap * threshold / 2
    bar = threshold / 2 + z_test * math.sqrt(s0 * (1 - s0) / n_level) / gap
    return prob * float(special.ndtr((f - bar) / se(f)))


#: A prefix search's model of itself: ``model(n, f, threshold, false_discoveries,
#: miss_rate, cap)`` is Pr(a value of frequency ``f`` is found from ``n`` reports).
FoundModel = Callable[[float, float, float, float, float, int], float]


def pem_found_model(pem: PrefixExtension, length: int | None = None) -> FoundModel:
    """PEM's model of its search (:func:`_found_probability`).

    Raises
    ------
    ValueError
        If ``length`` is given (it applies to byte-PEM only).
    """
    if length is not None:
        raise ValueError("length applies to BytePrefixExtension only")
    return functools.partial(_found_probability, pem)


def limit_from_model(
    model: FoundModel,
    n: int,
    threshold: float,
    recall: float,
    false_discoveries: float,
    miss_rate: float,
    max_survivors: int | None,
) -> float:
    """The smallest frequency ``model`` finds with probability ``recall`` (bisection):
    the arithmetic of :func:`deniable.estimation.detection_limit`, which documents the
    parameters and errors."""
    n = check_integer("n", n, minimum=1)
    threshold, recall, false_discoveries, miss_rate = (
        check_probability(name, value, low_open=True, high_open=True)
        for name, value in (
            ("threshold", threshold),
            ("recall", recall),
            ("false_discoveries", false_discoveries),
            ("miss_rate", miss_rate),
        )
    )
    cap = _survivor_cap(threshold, None, max_survivors)

    def found(f: float) -> float:
        return float(model(n, f, threshold, false_discoveries, miss_rate, cap))

    if found(1.0) < recall:
        return math.inf
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if found(mid) < recall else (low, mid)
    return high


def find_heavy_hitters(
    pem: PrefixExtension,
    reports: Any,
    threshold: float = 0.01,
    miss_rate: float = 0.05,
    *,
    false_discoveries: float = 0.05,
    top_k: int | None = None,
    max_survivors: int | None = None,
    on_overflow: Literal["keep", "raise"] = "keep",
) -> PrefixHeavyHitters:
    """Values whose frequency reaches ``threshold``, found level by level, with the
    expected number of false discoveries at most ``false_discoveries``.

    Parameters
    ----------
    pem : PrefixExtension
    reports : ndarray of ``PEM_DTYPE``, shape (n,)
    threshold : float in (0, 1), default 0.01
        Frequency (share of respondents) a value must have to be sought. A value
        returned whose true frequency is below ``threshold / 2`` is a false discovery.
    miss_rate : float in (0, 1), default 0.05
        Chance of losing, at one level's pruning, a value whose frequency is exactly
        ``threshold``.
    false_discoveries : float in (0, 1), default 0.05
        Bound on the expected number of false discoveries (Bonferroni over the last
        level's candidates; exact binomial tests).
    top_k : int >= 1, optional
        Top-k mode: return the ``top_k`` largest estimates (no threshold test).
    max_survivors : int >= 1, optional
        Prefixes kept from one level to the next (default ``SURVIVOR_FACTOR /
        threshold``, or ``SURVIVOR_FACTOR * top_k``).
    on_overflow : {"keep", "raise"}, default "keep"
        When more prefixes pass the pruning than ``max_survivors``: keep the largest
        estimates and say so in ``warnings``, or raise.

    Returns
    -------
    PrefixHeavyHitters

    Raises
    ------
    ValueError
        For a probability outside (0, 1), a ``top_k`` or ``max_survivors`` below 1 or
        an unknown ``on_overflow``.
    DetectionLimitError
        With ``on_overflow="raise"``, when a level's survivors exceed ``max_survivors``;
        the message and the error's ``detection_limit`` name the smallest frequency the
        reports find with recall 0.9
        (:func:`deniable.estimation.detection_limit`).
    ReportValidationError
        For malformed reports.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.estimation import find_heavy_hitters
    >>> from deniable.mechanisms import PrefixExtension
    >>> pem = PrefixExtension(4.0, max_length=3)
    >>> words = np.array(["abc"] * 3000 + ["xyz"] * 2000 + ["q"] * 5000)
    >>> reports = pem.randomize(words, np.random.default_rng(0))
    >>> find_heavy_hitters(pem, reports, threshold=0.1).values
    ['q', 'abc', 'xyz']
    """
    arr = pem.check_reports(reports)
    if arr.size == 0:
        raise ReportValidationError("no reports")
    return search_levels(
        pem,
        lambda level, candidates: level_counts(pem, arr, level, candidates),
        arr.size,
        threshold,
        miss_rate,
        false_discoveries=false_discoveries,
        top_k=top_k,
        max_survivors=max_survivors,
        on_overflow=on_overflow,
    )


def search_levels(
    pem: PrefixExtension,
    count: LevelCounter,
    n: int,
    threshold: float = 0.01,
    miss_rate: float = 0.05,
    *,
    false_discoveries: float = 0.05,
    top_k: int | None = None,
    max_survivors: int | None = None,
    on_overflow: Literal["keep", "raise"] = "keep",
) -> PrefixHeavyHitters:
    """:func:`find_heavy_hitters` with the counting handed in: ``count(level,
    candidates)`` returns the candidates' support counts among that level's reports
    and the number of those reports (:func:`level_counts` over an array; one Spark job
    a level in :func:`deniable.tables.spark.heavy_hitters_parquet`). ``n`` is the
    number of reports of all levels. Same parameters, result and errors.
    """
    plan = _plan(threshold, miss_rate, false_discoveries, top_k, max_survivors, on_overflow)
    candidates = np.arange(pem.base ** pem.lengths[0], dtype=np.uint64)
    n_level: list[int] = []
    n_candidates: list[int] = []
    warnings: list[str] = []
    for level in range(pem.levels):
        if level > 0:
            candidates = _extensions(pem, candidates, level)
        counts, reported = count(level, candidates)
        n_level.append(reported)
        n_candidates.append(candidates.size)
        estimate, std_error = _estimate_level(pem, counts, reported)
        if level == pem.levels - 1:
            break
        keep = _prune(estimate, std_error, level, n, pem, plan, warnings)
        candidates = candidates[keep]
    chosen, pvalue = _final(counts, n_level[-1], estimate, candidates.size, pem, plan)
    return _result(
        [pem.decode(int(c)) for c in candidates[chosen]],
        estimate[chosen],
        std_error[chosen],
        pvalue[chosen],
        n_level,
        n_candidates,
        plan,
        warnings,
    )


class _Plan(NamedTuple):
    """A search's validated parameters and its survivor cap."""

    threshold: float
    miss_rate: float
    false_discoveries: float
    top_k: int | None
    cap: int
    on_overflow: str
    z: float


def _plan(
    threshold: float,
    miss_rate: float,
    false_discoveries: float,
    top_k: int | None,
    max_survivors: int | None,
    on_overflow: str,
) -> _Plan:
    threshold, miss_rate, false_discoveries = (
        check_probability(name, value, low_open=True, high_open=True)
        for name, value in (
            ("threshold", threshold),
            ("miss_rate", miss_rate),
            ("false_discoveries", false_discoveries),
        )
    )
    if on_overflow not in ("keep", "raise"):
        raise ValueError(f"on_overflow must be 'keep' or 'raise', got {on_overflow!r}")
    if top_k is not None:
        top_k = check_integer("top_k", top_k, minimum=1)
    cap = _survivor_cap(threshold, top_k, max_survivors)
    z = float(special.ndtri(1 - miss_rate))
    return _Plan(threshold, miss_rate, false_discoveries, top_k, cap, on_overflow, z)


def _prune(
    estimate: NDArray[np.float64],
    std_error: NDArray[np.float64],
    level: int,
    n: int,
    pem: Any,
    plan: _Plan,
    warnings: list[str],
) -> NDArray[np.int64]:
    """Indices of the candidates kept for the next level, largest estimate first: those
    whose upper bound reaches the threshold (every one in top-k mode), at most the cap;
    past the cap, a warning naming the detection limit, or DetectionLimitError."""
    keep = (
        np.arange(estimate.size)
        if plan.top_k is not None
        else np.nonzero(estimate + plan.z * std_error >= plan.threshold)[0]
    )
    keep = keep[np.argsort(-estimate[keep], kind="stable")]
    if keep.size > plan.cap and plan.top_k is None:
        _overflow(level, keep.size, n, pem, plan, warnings, pem_found_model(pem))
    return np.asarray(keep[: plan.cap], dtype=np.int64)


def _overflow(
    level: int,
    passing: int,
    n: int,
    pem: Any,
    plan: _Plan,
    warnings: list[str],
    model: FoundModel,
) -> None:
    """More than the cap passed a level's pruning: a warning naming the detection limit
    (recall 0.9 under the search's ``model``), or DetectionLimitError with
    ``on_overflow="raise"``."""
    limit = limit_from_model(
        model, n, plan.threshold, 0.9, plan.false_discoveries, plan.miss_rate, plan.cap
    )
    message = (
        f"level {level}: {passing} prefixes may reach the threshold "
        f"{plan.threshold:g}, more than max_survivors = {plan.cap}: at n = {n} "
        f"reports and epsilon {pem.epsilon:.4g}, values are found with recall 0.9 "
        f"from a frequency of {limit:.4g} (the detection limit)"
    )
    if plan.on_overflow == "raise":
        raise DetectionLimitError(message, limit)
    warnings.append(f"{message}; the {plan.cap} largest estimates were kept")


def _final(
    counts: NDArray[np.int64],
    n_last: int,
    estimate: NDArray[np.float64],
    tested: int,
    pem: Any,
    plan: _Plan,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``(chosen indices, p-values)`` at the last level: the exact binomial test of
    ``frequency <= threshold / 2`` (of 0 in top-k mode) for every candidate, and those
    that pass at ``false_discoveries / tested`` (the ``top_k`` largest in top-k mode)."""
    _, _, _, p_star, q_star = pem._search_shape()
    null = q_star + (p_star - q_star) * (0 if plan.top_k else plan.threshold / 2)
    pvalue = np.where(counts > 0, special.bdtrc(counts - 1, max(n_last, 1), null), 1.0)
    if plan.top_k is not None:
        chosen = np.argsort(-estimate, kind="stable")[: plan.top_k]
    else:
        chosen = np.nonzero(pvalue <= plan.false_discoveries / max(tested, 1))[0]
        chosen = chosen[np.argsort(-estimate[chosen], kind="stable")]
    return np.asarray(chosen, dtype=np.int64), np.asarray(pvalue, dtype=np.float64)


def _result(
    values: list[str],
    estimate: NDArray[np.float64],
    std_error: NDArray[np.float64],
    pvalue: NDArray[np.float64],
    n_level: list[int],
    n_candidates: list[int],
    plan: _Plan,
    warnings: list[str],
) -> PrefixHeavyHitters:
    return PrefixHeavyHitters(
        values,
        estimate,
        std_error,
        math.nan if plan.top_k is not None else plan.threshold,
        plan.miss_rate,
        np.array(n_level, dtype=np.int64),
        np.array(n_candidates, dtype=np.int64),
        np.asarray(pvalue, dtype=np.float64),
        plan.false_discoveries,
        plan.top_k,
        warnings,
    )
