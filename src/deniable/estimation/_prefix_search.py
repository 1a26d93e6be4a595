"""Finding heavy hitters from PEM reports, level by level (Wang et al. 2021).

PEM's frontier for the one search of :mod:`._level_search` (its text gives the
estimator, the pruning, the test and top-k mode): the candidates of a level are codes
(uint64) of prefixes over the mechanism's alphabet, every extension of a survivor by
the level's symbols; their support counts come from local hashing's kernel, one pass
over the level's reports (:func:`level_counts`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import special

from ..errors import ReportValidationError
from ..mechanisms import PrefixExtension
from ._level_search import (
    FoundModel,
    Plan,
    PrefixHeavyHitters,
    Rule,
    Selection,
    noise_bar,
    plan_search,
    run_search,
    survivors_expected,
)

__all__ = [
    "LevelCounter",
    "find_heavy_hitters",
    "level_counts",
    "pem_found_model",
    "search_levels",
]


def level_counts(
    pem: PrefixExtension, reports: NDArray[Any], level: int, candidates: NDArray[np.uint64]
) -> tuple[NDArray[np.int64], int]:
    """Support counts of ``candidates`` (uint64 prefix codes of ``level``'s length,
    shape (m,)) among the reports of ``level``, and how many reports that level has.

    The unit of work of :func:`find_heavy_hitters`; integer counts, so partial counts
    over any split of the reports (files, Spark tasks) add up to the same.
    """
    from ..mechanisms import olh_candidate_counts

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
    every level's pruning (the upper bound reaches the threshold and its estimate passes
    the noise test among the level's candidates: about ``survivors_expected`` parents
    times the level's extensions) and passes the last level's Bonferroni test of ``f <=
    threshold / 2``."""
    levels, tested, widths, p_star, q_star = pem._search_shape()
    n_level = n / levels
    gap, q = float(p_star - q_star), float(q_star)

    def se(freq: float) -> float:
        s = q + gap * freq
        return math.sqrt(max(s * (1 - s), 1e-300) / n_level) / gap

    z_miss = float(special.ndtri(1 - miss_rate))
    prob = 1.0
    for level in range(levels - 1):
        bar = max(threshold - z_miss * se(threshold), noise_bar(tested, se(0.0), threshold))
        prob *= float(special.ndtr((f - bar) / se(f)))
        tested = survivors_expected(threshold, cap) * widths[level + 1]
    z_test = float(special.ndtri(1 - false_discoveries / max(tested, 1.0)))
    s0 = q + gap * threshold / 2
    bar = threshold / 2 + z_test * math.sqrt(s0 * (1 - s0) / n_level) / gap
    return prob * float(special.ndtr((f - bar) / se(f)))


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
    progress: Callable[[int], None] | None = None,
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
    progress : callable, optional
        Called as ``progress(1)`` after each level is searched (pem.levels calls in all),
        for a bar or a log (``tqdm(total=pem.levels).update`` draws one).

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
        progress=progress,
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
    progress: Callable[[int], None] | None = None,
) -> PrefixHeavyHitters:
    """:func:`find_heavy_hitters` with the counting handed in: ``count(level,
    candidates)`` returns the candidates' support counts among that level's reports
    and the number of those reports (:func:`level_counts` over an array; one Spark job
    a level in :func:`deniable.tables.spark.heavy_hitters_parquet`). ``n`` is the
    number of reports of all levels. Same parameters, result and errors.
    """
    plan = plan_search(threshold, miss_rate, false_discoveries, top_k, max_survivors, on_overflow)
    return run_search(_CodeFrontier(pem, count, n), plan, progress)


class _CodeFrontier:
    """PEM's candidates: uint64 codes of a level's prefixes (see :class:`Frontier
    <._level_search.Frontier>`)."""

    final_share = 1.0

    def __init__(self, pem: PrefixExtension, count: LevelCounter, n: int) -> None:
        self.mechanism, self.count, self.total = pem, count, n
        self.levels = pem.levels
        self.codes = np.arange(pem.base ** pem.lengths[0], dtype=np.uint64)

    def tested(self, level: int) -> tuple[int, int]:
        return self.codes.size, self.codes.size

    def select(self, level: int, rule: Rule, cap: int | None) -> Selection:
        counts, reports = self.count(level, self.codes)
        qualified = np.nonzero(counts >= rule(reports))[0]
        qualified = qualified[np.argsort(-counts[qualified], kind="stable")]
        kept = qualified[:cap]
        return Selection(self.codes[kept], counts[kept], reports, qualified.size)

    def advance(self, level: int, kept: Selection) -> None:
        self.codes = _extensions(self.mechanism, kept.ids, level + 1)

    def decode(self, ids: NDArray[Any]) -> list[str | None]:
        return [self.mechanism.decode(int(c)) for c in ids]

    def found_model(self) -> FoundModel:
        return pem_found_model(self.mechanism)

    def earlier(
        self, plan: Plan
    ) -> tuple[NDArray[Any], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        none = np.zeros(0)
        return np.zeros(0, dtype=np.uint64), none, none, none
