"""The exact prevalence threshold test on the reports, and its error rates."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._validation import check_integer, check_probability
from ..estimation import as_tally
from ..mechanisms import Design
from ..tallies import Tally

__all__ = [
    "Alternative",
    "PrevalenceTestErrorRates",
    "PrevalenceTestResult",
    "prevalence_test",
    "prevalence_test_error_rates",
]

Alternative = Literal["two-sided", "less", "greater"]
_ALTERNATIVES = ("two-sided", "less", "greater")


@dataclass(frozen=True)
class PrevalenceTestResult:
    """Exact test of a prevalence against a threshold.

    Attributes
    ----------
    statistic : float
        Moment estimate of the prevalence of "yes".
    pvalue : float
    null : float
        Prevalence under the null hypothesis.
    alternative : str
    count, n : int
        Reports of symbol 1 and all reports.
    null_report_share : float
        Share of reports equal to 1 expected at the null prevalence.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, prevalence_test
    >>> design = Warner(p=0.8)
    >>> reports = design.randomize(np.arange(1000) % 10 < 7, np.random.default_rng(0))
    >>> result = prevalence_test(design, reports)
    >>> result.alternative, result.n
    ('greater', 1000)
    """

    statistic: float
    pvalue: float
    null: float
    alternative: str
    count: int
    n: int
    null_report_share: float


def _report_alternative(design: Design, alternative: str) -> str:
    _, slope = design.yes_line
    if slope > 0 or alternative == "two-sided":
        return alternative
    return "less" if alternative == "greater" else "greater"


def _check_test_args(design: Design, null: float, alternative: str) -> float:
    if not design.is_binary:
        raise ValueError("prevalence_test needs a binary design (2 truths, 2 reports)")
    if alternative not in _ALTERNATIVES:
        raise ValueError(
            f"alternative must be one of {', '.join(_ALTERNATIVES)}, got {alternative!r}"
        )
    return check_probability("null", null)


def prevalence_test(
    design: Design,
    reports: ArrayLike | Tally,
    null: float = 0.5,
    alternative: str = "greater",
) -> PrevalenceTestResult:
    """Exact test of ``H0: prevalence = null`` ("is the majority happy?").

    The report share is affine in the prevalence, ``lam = P[1,0] + (P[1,1] - P[1,0]) pi``,
    so the test is an exact binomial test (:func:`scipy.stats.binomtest`) of the count
    of "yes" reports against ``lam(null)``, with the alternative flipped when the slope
    is negative. This makes exact the seed's threshold rule "#yes > n/2".

    Parameters
    ----------
    design : Design
        A binary design.
    reports : array_like of int, shape (n,), or Tally
    null : float in [0, 1], default 0.5
    alternative : {"greater", "less", "two-sided"}, default "greater"

    Returns
    -------
    PrevalenceTestResult

    Raises
    ------
    ValueError
        For a non-binary design, an unknown alternative, or a null outside [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, prevalence_test
    >>> design = Warner(p=0.8)
    >>> reports = design.randomize(np.arange(1000) % 10 < 7, np.random.default_rng(0))
    >>> prevalence_test(design, reports, null=0.5).pvalue < 0.001
    True
    """
    from scipy import stats

    null = _check_test_args(design, null, alternative)
    tally = as_tally(design, reports)
    lam0 = float(design.report_probabilities(null)[1])
    count = int(tally.counts[1])
    alt = _report_alternative(design, alternative)
    res = stats.binomtest(count, tally.n, lam0, alternative=alt)  # type: ignore[arg-type]
    statistic = float((design.inverse @ tally.shares)[1])
    return PrevalenceTestResult(
        statistic, float(res.pvalue), null, alternative, count, tally.n, lam0
    )


@dataclass(frozen=True)
class PrevalenceTestErrorRates:
    """How often :func:`prevalence_test` rejects at a given true prevalence.

    ``kind`` is "false positive" when the true prevalence satisfies the null
    hypothesis, else "false negative"; ``error_rate_*`` is then the rejection rate, or
    one minus it. ``simulated_std_error`` is the binomial SE of the simulated rate.

    Examples
    --------
    >>> from deniable import Warner, prevalence_test_error_rates
    >>> design = Warner(p=0.8)
    >>> rates = prevalence_test_error_rates(design, n=1000, prevalence=0.5, n_simulations=200)
    >>> rates.kind, bool(rates.rejection_rate_exact <= 0.05)
    ('false positive', True)
    """

    prevalence: float
    n: int
    significance_level: float
    kind: str
    rejection_rate_exact: float
    rejection_rate_simulated: float
    simulations: int

    @property
    def error_rate_exact(self) -> float:
        """Exact false positive or false negative rate."""
        r = self.rejection_rate_exact
        return r if self.kind == "false positive" else 1.0 - r

    @property
    def error_rate_simulated(self) -> float:
        """Simulated false positive or false negative rate."""
        r = self.rejection_rate_simulated
        return r if self.kind == "false positive" else 1.0 - r

    @property
    def simulated_std_error(self) -> float:
        """Binomial standard error of the simulated rate."""
        r = self.rejection_rate_exact
        return math.sqrt(r * (1.0 - r) / self.simulations)


def _pvalues(
    count: NDArray[np.int64], n: int, lam0: float, alternative: str
) -> NDArray[np.float64]:
    """Exact binomial p-values for many counts (same rule as scipy.stats.binomtest)."""
    from scipy import stats

    if alternative == "greater":
        return np.asarray(stats.binom.sf(count - 1, n, lam0))
    if alternative == "less":
        return np.asarray(stats.binom.cdf(count, n, lam0))
    pmf = stats.binom.pmf(np.arange(n + 1), n, lam0)
    order = np.sort(pmf)
    cum = np.cumsum(order)
    idx = np.searchsorted(order, pmf[count] * (1 + 1e-7), side="right")
    return np.minimum(1.0, cum[idx - 1])


def prevalence_test_error_rates(
    design: Design,
    n: int,
    prevalence: float,
    null: float = 0.5,
    alternative: str = "greater",
    significance_level: float = 0.05,
    n_simulations: int = 10_000,
    rng: np.random.Generator | None = None,
    progress: Callable[[int], None] | None = None,
) -> PrevalenceTestErrorRates:
    """False positive / false negative rate of :func:`prevalence_test`, exact and simulated.

    Simulation draws ``n_simulations`` surveys of ``n`` respondents, each truly "yes"
    with probability ``prevalence``, randomizes every answer with ``design.randomize``
    and applies the test; the exact rate sums the binomial probabilities of the
    rejection region.

    Parameters
    ----------
    design : Design (binary)
    n : int >= 1
        Respondents per survey.
    prevalence : float in [0, 1]
        True prevalence of "yes".
    null, alternative
        As in :func:`prevalence_test`.
    significance_level : float in (0, 1), default 0.05
    n_simulations : int >= 1
    rng : numpy.random.Generator, optional
        Simulation randomness (default seeded with 0).
    progress : callable, optional
        Called as ``progress(k)`` after each chunk of ``k`` simulated surveys (they sum
        to ``n_simulations``): a bar's advance, or a callback.

    Returns
    -------
    PrevalenceTestErrorRates

    Raises
    ------
    ValueError
        For a design that is not yes/no, ``n < 1``, a prevalence, null or significance
        level outside its range, or an unknown ``alternative``.

    Examples
    --------
    >>> from deniable import Warner, prevalence_test_error_rates
    >>> design = Warner(p=0.8)
    >>> rates = prevalence_test_error_rates(design, n=1000, prevalence=0.6, n_simulations=200)
    >>> rates.kind, round(rates.rejection_rate_exact, 3)
    ('false negative', 0.983)
    """
    from scipy import stats

    null = _check_test_args(design, null, alternative)
    n = check_integer("n", n, minimum=1)
    pi = check_probability("prevalence", prevalence)
    alpha = check_probability(
        "significance_level", significance_level, low_open=True, high_open=True
    )
    sims = check_integer("n_simulations", n_simulations, minimum=1)
    rng = np.random.default_rng(0) if rng is None else rng
    alt = _report_alternative(design, alternative)
    lam0 = float(design.report_probabilities(null)[1])
    lam = float(design.report_probabilities(pi)[1])
    reject = _pvalues(np.arange(n + 1), n, lam0, alt) <= alpha
    exact = float(stats.binom.pmf(np.arange(n + 1), n, lam)[reject].sum())
    rejected = 0
    per_chunk = max(1, 10_000_000 // n)
    done = 0
    while done < sims:
        s = min(per_chunk, sims - done)
        truths = rng.random(s * n) < pi
        reports = design.randomize(truths, rng).reshape(s, n)
        counts = reports.sum(axis=1, dtype=np.int64)
        rejected += int(reject[counts].sum())
        done += s
        if progress is not None:
            progress(s)
    in_null = {"greater": pi <= null, "less": pi >= null, "two-sided": pi == null}[alternative]
    return PrevalenceTestErrorRates(
        pi,
        n,
        alpha,
        "false positive" if in_null else "false negative",
        exact,
        rejected / sims,
        sims,
    )
