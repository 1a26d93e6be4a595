"""Planning a survey: sample size, disclosure risk, and the prevalence threshold test."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from ._validation import check_confidence_level, check_integer, check_probability
from ._variance import affine_map, worst_case_variance
from .designs import Design
from .estimate import _as_tally
from .tally import Tally

__all__ = [
    "DisclosureRisk",
    "PrevalenceTestErrorRates",
    "PrevalenceTestResult",
    "disclosure_risk",
    "prevalence_test",
    "prevalence_test_error_rates",
    "sample_size",
]

SampleSizeMethod = Literal["normal", "chebyshev", "exact"]
Alternative = Literal["two-sided", "less", "greater"]
_ALTERNATIVES = ("two-sided", "less", "greater")


def _ceil(x: float) -> int:
    """Ceiling that forgives floating-point noise (99999.99999999999 -> 100000)."""
    r = round(x)
    return int(r) if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else math.ceil(x)


def sample_size(
    design: Design,
    margin: float,
    confidence_level: float = 0.95,
    method: str = "normal",
    prevalence: float | tuple[float, float] | None = None,
) -> int:
    """Respondents needed so the moment estimate is within ``margin`` of the truth.

    Parameters
    ----------
    design : Design
    margin : float in (0, 1)
        Largest acceptable error ``|pi_hat - pi|`` (absolute, on the prevalence scale).
    confidence_level : float in (0, 1), default 0.95
        Probability that the error stays within the margin.
    method : {"normal", "chebyshev", "exact"}
        ``normal``: ``n = z^2 V / margin^2``. ``chebyshev``: the distribution-free
        ``n = V / ((1 - confidence_level) margin^2)`` (the seed's rule, which with its
        ``V = 3/4`` gives 75,000 at ``margin=0.01``, 90%; with the exact worst case ``V = 1``
        it is 100,000). ``exact``: the smallest n (found by bisection, then a local scan,
        since binomial coverage is not monotone in n) whose exact binomial probability
        of an error within the margin reaches the level at every prevalence considered;
        for designs with a per-category affine inverse (binary designs, k-ary RR).
        ``V`` is the exact per-respondent variance ``n Var(pi_hat)``, at its worst over
        the prevalence.
    prevalence : float or (low, high), optional
        Plausible prevalence (of "yes" for binary designs; of each category for k-ary
        designs). Default: the worst case over [0, 1].

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For a margin or confidence level outside (0, 1), an unknown method, or
        ``exact`` on a design without an affine inverse.

    Examples
    --------
    >>> from deniable.designs import ForcedResponse
    >>> coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    >>> sample_size(coins, margin=0.01, confidence_level=0.90, method="chebyshev")
    100000
    >>> sample_size(coins, margin=0.01, confidence_level=0.90, method="normal")
    27056
    """
    q = check_probability("margin", margin, low_open=True, high_open=True)
    level = check_confidence_level(confidence_level)
    if method not in ("normal", "chebyshev", "exact"):
        raise ValueError(f"method must be one of normal, chebyshev, exact; got {method!r}")
    variance = float(worst_case_variance(design, prevalence).max())
    if method == "chebyshev":
        return max(1, _ceil(variance / ((1.0 - level) * q * q)))
    z = float(special.ndtri(1.0 - (1.0 - level) / 2.0))
    n_normal = max(1, _ceil(z * z * variance / (q * q)))
    if method == "normal":
        return n_normal
    return _exact_sample_size(design, q, level, prevalence, n_normal)


def _exact_sample_size(
    design: Design,
    margin: float,
    level: float,
    prevalence: float | tuple[float, float] | None,
    n_start: int,
) -> int:
    amap = affine_map(design)
    if amap is None:
        raise ValueError("method 'exact' needs a binary design or k-ary RR (affine inverse)")
    categories = [1] if design.is_binary else range(design.n_truths)
    grids = []
    for j in categories:
        lo, hi = (0.0, 1.0) if prevalence is None else _range(prevalence)
        pis = np.unique(np.concatenate([np.linspace(lo, hi, 201), [lo, hi]]))
        lam = (pis - amap.intercept[j]) / amap.slope[j]
        half = np.clip(0.5, lam.min(), lam.max())
        lam = np.unique(np.append(lam, half))
        grids.append((lam, margin / abs(amap.slope[j])))

    def coverage(n: int) -> float:
        worst = 1.0
        for lam, width in grids:
            lo = np.ceil(n * (lam - width) - 1e-9)
            hi = np.floor(n * (lam + width) + 1e-9)
            cov = stats.binom.cdf(hi, n, lam) - stats.binom.cdf(lo - 1, n, lam)
            worst = min(worst, float(np.min(cov)))
        return worst

    hi_n = max(2, n_start)
    while coverage(hi_n) < level:
        hi_n *= 2
    lo_n = 0  # coverage(0) is taken as failing
    while hi_n - lo_n > 1:
        mid = (lo_n + hi_n) // 2
        if coverage(mid) >= level:
            hi_n = mid
        else:
            lo_n = mid
    best = hi_n
    for n in range(hi_n - 1, max(0, hi_n - max(20, hi_n // 50)), -1):
        if coverage(n) >= level:
            best = n
    return best


def _range(prevalence: float | tuple[float, float]) -> tuple[float, float]:
    arr = np.atleast_1d(np.asarray(prevalence, dtype=np.float64))
    return float(arr.min()), float(arr.max())


@dataclass(frozen=True)
class DisclosureRisk:
    """What an observer believes about a respondent after seeing one report.

    Attributes
    ----------
    design : Design
    prior : ndarray, shape (k,)
        Belief in each truth before the report.
    posterior : ndarray, shape (m, k)
        ``posterior[r, t] = Pr(truth t | report r) = P[r, t] prior[t] / (P prior)[r]``;
        rows of reports impossible under the prior are NaN.
    """

    design: Design
    prior: NDArray[np.float64]
    posterior: NDArray[np.float64]

    @property
    def max_posterior(self) -> NDArray[np.float64]:
        """Highest belief in each truth after any possible report, shape (k,)."""
        return np.asarray(np.nanmax(self.posterior, axis=0))

    @property
    def posterior_yes(self) -> NDArray[np.float64]:
        """Binary designs: belief in "yes" after each report, shape (m,)."""
        return self.posterior[:, -1]

    def describe(self) -> list[str]:
        """Plain sentences, one per report, for respondents and survey designers."""
        d = self.design
        t = d.n_truths - 1 if d.is_binary else int(np.argmax(self.max_posterior - self.prior))
        label = d.truth_labels[t]
        lines = []
        for r, name in enumerate(d.report_labels):
            post = self.posterior[r, t]
            if np.isnan(post):
                continue
            lines.append(
                f'If the report is "{name}", an observer\'s belief that the true answer is '
                f'"{label}" moves from {self.prior[t]:.0%} to {post:.0%}.'
            )
        return lines

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "prior": self.prior.tolist(),
            "posterior": [
                [None if math.isnan(v) else v for v in row] for row in self.posterior.tolist()
            ],
            "max_posterior": self.max_posterior.tolist(),
            "truth_labels": list(self.design.truth_labels),
            "report_labels": list(self.design.report_labels),
        }


def disclosure_risk(design: Design, prior: float | ArrayLike) -> DisclosureRisk:
    """Posterior belief in each truth after each report (Bayes' rule on the matrix).

    Parameters
    ----------
    design : Design
    prior : float in [0, 1] or array_like, shape (k,)
        Prior prevalence of "yes" (binary designs), or a prior distribution over truths.

    Returns
    -------
    DisclosureRisk

    Examples
    --------
    >>> from deniable.designs import ForcedResponse
    >>> risk = disclosure_risk(ForcedResponse(p_yes=0.25, p_no=0.25), prior=0.1)
    >>> risk.posterior_yes.round(3).tolist()
    [0.036, 0.25]
    """
    pi = design._as_prevalence(prior)
    joint = design.matrix * pi[None, :]
    total = joint.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        posterior = np.where(total > 0, joint / total, np.nan)
    return DisclosureRisk(design, pi, posterior)


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
    """

    statistic: float
    pvalue: float
    null: float
    alternative: str
    count: int
    n: int
    null_report_share: float


def _report_alternative(design: Design, alternative: str) -> str:
    slope = design.matrix[1, 1] - design.matrix[1, 0]
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
    """
    null = _check_test_args(design, null, alternative)
    tally = _as_tally(design, reports)
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

    Returns
    -------
    PrevalenceTestErrorRates
    """
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
