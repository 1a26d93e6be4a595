"""The one level-by-level search for heavy hitters without a candidate list, shared by
PEM (codes over an alphabet, :mod:`._prefix_search`) and byte-PEM (UTF-8 bytes,
:mod:`._byte_prefix_search`); Wang et al. 2021's prefix extension method.

A search walks the levels; a *frontier* (one per mechanism) holds the candidates of a
level, counts their support among the level's reports, and extends the survivors. The
search decides, for every level, which support counts qualify and how many candidates
go on; the frontier only counts and extends, so both mechanisms share every rule:

At each level the frequency of a candidate is estimated by local hashing's unbiased
estimator (Wang, Blocki, Li & Jha 2017), ``f = (C / n_l - q*) / (p* - q*)`` with ``C``
its support count among the ``n_l`` reports of the level, and standard error
``sqrt(s (1 - s) / n_l) / (p* - q*)`` with ``s = C / n_l`` (the level's reporters are a
random sample of all respondents). Both are functions of ``C``, so every rule is a
least qualifying count, decided once a level (``C >= rule(n_l)``: each rule below holds
from a least count on), and a frontier that counts in blocks (byte-PEM's spectra) keeps
only qualifying candidates.

*Pruning* (generous): a prefix is kept while its upper confidence bound
``f + z_(1 - miss_rate) SE`` reaches the threshold, so a value whose frequency is
exactly the threshold is lost at one level with probability at most ``miss_rate``
(its prefixes are at least as frequent).

*The noise test*: a level's reports support only so much. Where the pruning alone
would let prefixes of frequency 0 through (low signal: a few reports a candidate, a
small epsilon), a prefix is also kept only when the exact binomial test of
``frequency = 0`` rejects at level ``NOISE_FACTOR / (t m)`` over the ``m`` candidates
of the level: the expected number of prefixes of frequency 0 kept is then at most
``NOISE_FACTOR / t`` a level, whatever the epsilon, and the prefixes kept number about
``1 / t`` (those that are frequent: the prefixes of one level have frequencies summing
to 1) plus that. The search's cost is then known before it starts
(:func:`search_cost`): the first level's candidates, then about ``(1 + NOISE_FACTOR) /
t`` survivors times each level's extensions. Before the noise test, the survivors
were noise up to the cap at low signal (5,557 prefixes passed the first level's
pruning of 6-symbol values on the 39-symbol alphabet at n = 10^6, epsilon 1), and
the cap decided the time. The cap stays as a guard: more than ``SURVIVOR_FACTOR / t``
survivors and the search keeps the largest ``SURVIVOR_FACTOR / t`` estimates (with a
warning that names the detection limit) or stops with
:class:`~deniable.errors.DetectionLimitError`.

*Returning* (controlled): a last-level candidate is returned only when the exact
binomial test of ``frequency <= t / 2`` rejects at level ``share false_discoveries /
m`` (Bonferroni over the ``m`` candidates of the last level; ``share`` is 1 for PEM,
1/2 for byte-PEM, whose values that ended early are tested with the other half): under
that null the support count is a sum of independent Bernoulli variables of mean at
most ``s0 = q* + (p* - q*) t / 2``, whose upper tail beyond ``n s0 + 1`` is at most the
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
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .._validation import check_integer, check_probability
from ..errors import DetectionLimitError
from ._estimates import ConfidenceInterval, EstimateResult
from ._normal_theory import normal_only_interval

__all__ = [
    "NOISE_FACTOR",
    "SURVIVOR_FACTOR",
    "FoundModel",
    "Frontier",
    "Plan",
    "PrefixHeavyHitters",
    "Rule",
    "SearchCost",
    "Selection",
    "estimate_level",
    "limit_from_model",
    "noise_bar",
    "plan_cost",
    "plan_search",
    "run_search",
    "support_pvalues",
    "survivor_cap",
    "survivors_expected",
]

#: Survivors kept from one level to the next: at most ``SURVIVOR_FACTOR / threshold``
#: (or ``SURVIVOR_FACTOR * top_k``).
SURVIVOR_FACTOR = 4

#: Prefixes of frequency 0 a level may keep, in expectation: ``NOISE_FACTOR / threshold``
#: (the noise test of the module's text).
NOISE_FACTOR = 1


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


#: A prefix search's model of itself: ``model(n, f, threshold, false_discoveries,
#: miss_rate, cap)`` is Pr(a value of frequency ``f`` is found from ``n`` reports).
FoundModel = Callable[[float, float, float, float, float, int], float]

#: ``rule(n_l)``: the least support count that qualifies at a level of ``n_l`` reports
#: (every count from it on qualifies; ``n_l + 1`` when none does).
Rule = Callable[[int], int]


class Plan(NamedTuple):
    """A search's validated parameters and its survivor cap."""

    threshold: float
    miss_rate: float
    false_discoveries: float
    top_k: int | None
    cap: int
    on_overflow: str
    z: float
    noise: float  # prefixes of frequency 0 a level may keep in expectation (inf: top-k)


class Selection(NamedTuple):
    """What a frontier kept at a level: ``ids`` (its own encoding: codes or byte rows,
    first axis (m,)), their support ``counts`` (m,) int64 in the order of a stable sort
    by decreasing count, the level's ``reports``, and ``passing``: how many candidates
    qualified before the cap."""

    ids: NDArray[Any]
    counts: NDArray[np.int64]
    reports: int
    passing: int


class Frontier(Protocol):
    """The candidates of a search, level by level (one implementation per mechanism)."""

    mechanism: Any  # has _search_shape() and epsilon
    levels: int
    total: int  # reports over all levels
    final_share: float  # the share of false_discoveries the last level's test spends

    def tested(self, level: int) -> tuple[int, int]:
        """``(candidates of the level's test, candidates counted at the level)``."""
        ...

    def select(self, level: int, rule: Rule, cap: int | None) -> Selection:
        """Count the level's candidates; keep those whose count qualifies, at most
        ``cap`` of the largest counts (ties: the first in the frontier's order)."""
        ...

    def advance(self, level: int, kept: Selection) -> None:
        """The next level's candidates: the extensions of ``kept``."""
        ...

    def decode(self, ids: NDArray[Any]) -> list[str | None]:
        """The values of ``ids`` (None: not a value, such as invalid UTF-8)."""
        ...

    def found_model(self) -> FoundModel:
        """The search's model of itself, for the detection limit."""
        ...

    def earlier(
        self, plan: Plan
    ) -> tuple[NDArray[Any], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Values returned besides the last level's, tested with the rest of
        ``false_discoveries``: ``(ids, estimate, std_error, pvalue)``."""
        ...


def survivor_cap(threshold: float, top_k: int | None, max_survivors: int | None) -> int:
    """Prefixes kept from one level to the next (see :data:`SURVIVOR_FACTOR`)."""
    if max_survivors is not None:
        return check_integer("max_survivors", max_survivors, minimum=1)
    if top_k is not None:
        return SURVIVOR_FACTOR * top_k
    return math.ceil(SURVIVOR_FACTOR / threshold)


def plan_search(
    threshold: float,
    miss_rate: float,
    false_discoveries: float,
    top_k: int | None,
    max_survivors: int | None,
    on_overflow: str,
) -> Plan:
    """The search's parameters, checked (the errors of
    :func:`~deniable.estimation.find_heavy_hitters`)."""
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
    cap = survivor_cap(threshold, top_k, max_survivors)
    z = float(special.ndtri(1 - miss_rate))
    noise = math.inf if top_k is not None else NOISE_FACTOR / threshold
    return Plan(threshold, miss_rate, false_discoveries, top_k, cap, on_overflow, z, noise)


def noise_bar(tested: float, null_se: float, threshold: float) -> float:
    """The estimate the noise test asks of a candidate among ``tested`` whose estimate
    has standard error ``null_se`` at frequency 0, in the search's model of itself
    (normal approximation; ``-inf`` where the test asks nothing)."""
    noise = NOISE_FACTOR / threshold
    return null_se * float(special.ndtri(1 - noise / tested)) if tested > noise else -math.inf


def survivors_expected(threshold: float, cap: int) -> float:
    """The survivors a level is expected to keep at most, in the search's model of
    itself: the ``1 / threshold`` prefixes that can be frequent plus the noise test's
    ``NOISE_FACTOR / threshold``, never above the ``cap``."""
    return min(float(cap), (1 + NOISE_FACTOR) / threshold)


def estimate_level(
    mechanism: Any, counts: NDArray[np.int64], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(estimate, std_error)`` of candidates from their support counts among a
    level's ``n`` reports (0 and inf without reports)."""
    if n == 0:
        return np.zeros(counts.size), np.full(counts.size, np.inf)
    _, _, _, p_star, q_star = mechanism._search_shape()
    share = counts / n
    gap = p_star - q_star
    estimate = (share - q_star) / gap
    std_error = np.sqrt(np.maximum(share * (1 - share), 1e-300) / n) / gap
    return estimate, std_error


def support_pvalues(
    mechanism: Any, plan: Plan, counts: NDArray[np.int64], n: NDArray[np.int64] | int
) -> NDArray[np.float64]:
    """Exact binomial p-values of "frequency <= threshold / 2" (of "frequency = 0" in
    top-k mode) from support ``counts`` among ``n`` reports (1 for a count of 0)."""
    _, _, _, p_star, q_star = mechanism._search_shape()
    null = q_star + (p_star - q_star) * (0 if plan.top_k else plan.threshold / 2)
    c = np.asarray(counts)
    pvalue = np.where(c > 0, special.bdtrc(c - 1, np.maximum(n, 1), null), 1.0)
    return np.asarray(pvalue, dtype=np.float64)


def least_count(passes: Callable[[NDArray[np.int64]], NDArray[np.bool_]], n: int) -> int:
    """The smallest count ``c`` in ``0..n`` with ``passes(c)``, for a test that every
    count above a passing one passes; ``n + 1`` when none does. By bisection over
    ``0..n`` (about ``log2 n`` calls on one count each): nothing of size ``n`` is made,
    so the rule of a level of 10^9 reports costs what one of 10^3 does."""
    if not bool(passes(np.array([n], dtype=np.int64))[0]):
        return n + 1
    low, high = 0, n  # passes(high); no count below low passes
    while low < high:
        mid = (low + high) // 2
        if bool(passes(np.array([mid], dtype=np.int64))[0]):
            high = mid
        else:
            low = mid + 1
    return low


def _prune_rule(mechanism: Any, plan: Plan, tested: int, n: int) -> int:
    """The least count whose upper bound reaches the threshold and, among ``tested``
    candidates, that passes the noise test (the module's text; 0 in top-k mode). Both
    hold from a least count on: the noise test's p-value falls as the count grows, and
    ``f + z SE`` rises with it up to its largest value and then falls, but only to
    ``(1 - q*) / (p* - q*) >= 1``, at or above any threshold."""
    if plan.top_k is not None:
        return 0
    _, _, _, _, q_star = mechanism._search_shape()
    noise = plan.noise < tested

    def passes(counts: NDArray[np.int64]) -> NDArray[np.bool_]:
        estimate, std_error = estimate_level(mechanism, counts, n)
        keep = estimate + plan.z * std_error >= plan.threshold
        if noise:
            zero = np.where(counts > 0, special.bdtrc(counts - 1, max(n, 1), q_star), 1.0)
            keep &= zero <= plan.noise / tested
        return np.asarray(keep)

    return least_count(passes, n)


def _test_rule(mechanism: Any, plan: Plan, cut: float, n: int) -> int:
    """The least count whose exact test rejects at ``cut`` (its p-value falls as the count
    grows; 0 in top-k mode)."""
    if plan.top_k is not None:
        return 0
    return least_count(lambda c: support_pvalues(mechanism, plan, c, n) <= cut, n)


def run_search(
    frontier: Frontier, plan: Plan, progress: Callable[[int], None] | None = None
) -> PrefixHeavyHitters:
    """The search of the module's text over ``frontier``'s candidates; ``progress(1)``
    after each level.

    Raises
    ------
    DetectionLimitError
        With ``on_overflow="raise"``, when a level's survivors exceed the cap.
    """
    mechanism = frontier.mechanism
    n_level: list[int] = []
    n_candidates: list[int] = []
    warnings: list[str] = []
    for level in range(frontier.levels):
        tested, counted = frontier.tested(level)
        n_candidates.append(counted)
        if level == frontier.levels - 1:
            cut = frontier.final_share * plan.false_discoveries / max(tested, 1)
            rule = functools.partial(_test_rule, mechanism, plan, cut)
            kept = frontier.select(level, rule, plan.top_k)
            n_level.append(kept.reports)
            if progress is not None:
                progress(1)
            break
        rule = functools.partial(_prune_rule, mechanism, plan, tested)
        kept = frontier.select(level, rule, plan.cap)
        n_level.append(kept.reports)
        if kept.passing > plan.cap and plan.top_k is None:
            _overflow(level, kept.passing, frontier, plan, warnings)
        frontier.advance(level, kept)
        if progress is not None:
            progress(1)
    estimate, std_error = estimate_level(mechanism, kept.counts, kept.reports)
    pvalue = support_pvalues(mechanism, plan, kept.counts, kept.reports)
    early_ids, early_estimate, early_se, early_pvalue = frontier.earlier(plan)
    values = frontier.decode(early_ids) + frontier.decode(kept.ids)
    estimate = np.concatenate([early_estimate, estimate])
    std_error, pvalue = (
        np.concatenate([early_se, std_error]),
        np.concatenate([early_pvalue, pvalue]),
    )
    order = np.argsort(-estimate, kind="stable")
    order = np.array([i for i in order if values[i] is not None], dtype=np.int64)[: plan.top_k]
    return PrefixHeavyHitters(
        [str(values[i]) for i in order],
        estimate[order],
        std_error[order],
        math.nan if plan.top_k is not None else plan.threshold,
        plan.miss_rate,
        np.array(n_level, dtype=np.int64),
        np.array(n_candidates, dtype=np.int64),
        np.asarray(pvalue[order], dtype=np.float64),
        plan.false_discoveries,
        plan.top_k,
        warnings,
    )


def _overflow(
    level: int, passing: int, frontier: Frontier, plan: Plan, warnings: list[str]
) -> None:
    """More than the cap passed a level's pruning: a warning naming the detection limit
    (recall 0.9 under the search's model of itself), or DetectionLimitError with
    ``on_overflow="raise"``."""
    n = frontier.total
    limit = limit_from_model(
        frontier.found_model(), n, plan.threshold, 0.9, plan.false_discoveries,
        plan.miss_rate, plan.cap,
    )  # fmt: skip
    message = (
        f"level {level}: {passing} prefixes may reach the threshold "
        f"{plan.threshold:g}, more than max_survivors = {plan.cap}: at n = {n} "
        f"reports and epsilon {frontier.mechanism.epsilon:.4g}, values are found with "
        f"recall 0.9 from a frequency of {limit:.4g} (the detection limit)"
    )
    if plan.on_overflow == "raise":
        raise DetectionLimitError(message, limit)
    warnings.append(f"{message}; the {plan.cap} largest estimates were kept")


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
    cap = survivor_cap(threshold, None, max_survivors)

    def found(f: float) -> float:
        return float(model(n, f, threshold, false_discoveries, miss_rate, cap))

    if found(1.0) < recall:
        return math.inf
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if found(mid) < recall else (low, mid)
    return high


class SearchCost(NamedTuple):
    """What a search will cost, known before it starts (:func:`search_cost`).

    Attributes
    ----------
    reports : ndarray, shape (levels,), float64
        Expected reports of each level.
    candidates : ndarray, shape (levels,), float64
        Candidates a level is expected to test at most: the first level's every prefix,
        then ``1 / threshold`` frequent parents plus the prefixes of frequency 0 the
        noise test lets through (in expectation, exactly), times the extensions.
    candidates_bound : ndarray, shape (levels,), float64
        Candidates a level can test: the cap's parents times the extensions.
    pairs, pairs_bound : float
        Report-candidate pairs, ``sum(reports * candidates)`` (the OLH hash tests of
        PEM; byte-PEM counts a parent's extensions from one transform instead).

    Examples
    --------
    >>> from deniable.estimation import search_cost
    >>> from deniable.mechanisms import PrefixExtension
    >>> pem = PrefixExtension(4.0, max_length=4, alphabet="abc", lengths=[2, 4])
    >>> search_cost(pem, 10_000, threshold=0.1).candidates_bound.tolist()
    [16.0, 640.0]
    """

    reports: NDArray[np.float64]
    candidates: NDArray[np.float64]
    candidates_bound: NDArray[np.float64]
    pairs: float
    pairs_bound: float

    def __str__(self) -> str:
        def levels(values: NDArray[np.float64]) -> str:
            if values.size <= 4:
                return ", ".join(f"{v:,.0f}" for v in values)
            return f"{values[0]:,.0f}, then up to {values[1:].max():,.0f} a level"

        return (
            f"search cost: candidates per level {levels(self.candidates)} (at most "
            f"{levels(self.candidates_bound)}); {self.pairs:.3g} report-candidate pairs "
            f"(at most {self.pairs_bound:.3g})"
        )


def plan_cost(mechanism: Any, n: int, plan: Plan) -> SearchCost:
    """The cost of the search of ``plan`` over ``n`` reports of ``mechanism`` (PEM or
    byte-PEM), before any report is read (see :class:`SearchCost`)."""
    levels, first, widths, _, q_star = mechanism._search_shape()
    shares = getattr(mechanism, "level_probabilities", np.full(levels, 1.0 / levels))
    reports = n * np.asarray(shares, dtype=np.float64)
    frequent = math.inf if plan.top_k is not None else 1.0 / plan.threshold
    candidates = np.empty(levels)
    bound = np.empty(levels)
    candidates[0] = bound[0] = tested = float(first)
    for level in range(1, levels):
        n_l = max(round(float(reports[level - 1])), 1)
        least = _prune_rule(mechanism, plan, max(int(tested), 1), n_l)
        null = float(special.bdtrc(least - 1, n_l, q_star)) if least > 0 else 1.0
        parents = min(float(plan.cap), frequent + tested * null)
        candidates[level] = tested = parents * widths[level]
        bound[level] = plan.cap * widths[level]
    return SearchCost(
        reports, candidates, bound, float(reports @ candidates), float(reports @ bound)
    )
