"""One result vocabulary for every estimate (the words of scipy.stats and statsmodels).

Every estimate-like result in the package has

* ``.estimate``: the point estimate (an ndarray, or a float for a scalar result);
* ``.std_error``: its standard error, the same shape;
* ``.confidence_interval(confidence_level=0.95, method=...)``: a
  :class:`ConfidenceInterval` ``(low, high)``, each the shape of ``estimate``;
* ``.summary()``: a plain-text table;
* ``.to_frame()``: a :class:`pandas.DataFrame` (pandas is loaded only then).

Regression results also carry statsmodels' ``.params`` and ``.bse``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .._validation import JSON, check_confidence_level, check_probability
from ..errors import (
    DeniableWarning,
    IntervalCoverageWarning,
)
from ..mechanisms import BloomChannel, CategoricalMechanism, MatrixChannel, SupportChannel
from ..tallies import RapporTally, SupportTally, Tally
from ._base import ConfidenceInterval, EstimateResult, Summary, interval_dict, summary_table
from ._intervals import (
    INTERVAL_METHODS,
    prevalence_intervals,
    share_interval,
    share_to_prevalence,
)
from ._normal_theory import wald_interval, z_quantile
from ._variance import affine_map
from ._warned import FLAG_Z, estimate_warnings

__all__ = [
    "FLAG_Z",
    "MAX_UNIFIED_SUPPORT_CELLS",
    "ConfidenceInterval",
    "EstimateResult",
    "PrevalenceEstimate",
    "RapporEstimate",
    "interval_dict",
    "summary_table",
]


#: What each estimation method's point estimate is called in tables.
_ESTIMATE_NAMES = {
    "moment": "unbiased (moment)",
    "mle": "constrained maximum-likelihood",
    "bayes": "Bayesian posterior mean",
}


@dataclass(frozen=True)
class PrevalenceEstimate(EstimateResult):
    """The estimated distribution of the truth, with its uncertainty.

    Attributes
    ----------
    mechanism : Mechanism
        The design, frequency oracle or RAPPOR the reports came through.
    tally : Tally, SupportTally or RapporTally
        Report counts, shape (m,); an oracle's support counts, shape (k,); or RAPPOR's
        bit counts per cohort.
    method : {"moment", "mle", "bayes", "lasso+nnls"}
    estimate : ndarray, shape (k,), float64
        Estimated share of each truth category (index 1 = "yes" for binary designs;
        the frequency of each value for an oracle). The moment estimate is unbiased
        and is never clipped, so it can leave [0, 1]. (``prevalence``, its old name,
        is deprecated.)
    covariance : ndarray, shape (k, k), float64, or None
        Estimated covariance of ``estimate`` (None for frequency oracles, whose
        domains can have millions of values; see ``variance``).
    variance : ndarray, shape (k,), float64, or None
        Estimated variance of each entry when no covariance is kept.
    boundary_std_error : ndarray, shape (k,), float64, or None
        Standard error each entry's estimator would have with that entry's prevalence
        at 0 (designs varying by respondent, two truths): the ``normal`` interval's
        upper end is at least ``z`` times it, and symmetrically at 1 (a power
        constraint, Cowan, Cranmer, Gross & Vitells 2011).
    prior : ndarray, shape (k,), or None
        Dirichlet pseudocounts (``bayes`` only).
    posterior : ndarray, shape (draws, k), or None
        Posterior draws (``bayes`` only).
    iterations : int
        EM iterations used (``mle``), 0 otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import ForcedResponse, estimate
    >>> result = estimate(ForcedResponse(p_yes=0.25, p_no=0.25), np.array([0, 1, 1, 0, 1, 1]))
    >>> result.estimate.round(4).tolist(), result.n
    ([0.1667, 0.8333], 6)
    """

    mechanism: CategoricalMechanism[Any, Any]
    tally: Tally | SupportTally | RapporTally
    method: str
    estimate: NDArray[np.float64]
    covariance: NDArray[np.float64] | None
    prior: NDArray[np.float64] | None = None
    posterior: NDArray[np.float64] | None = field(default=None, repr=False)
    iterations: int = 0
    variance: NDArray[np.float64] | None = field(default=None, repr=False)
    boundary_std_error: NDArray[np.float64] | None = field(default=None, repr=False)

    @property
    def prevalence(self) -> NDArray[np.float64]:
        """Deprecated name of :attr:`estimate` (removed in 0.3)."""
        warnings.warn(
            "PrevalenceEstimate.prevalence is deprecated; use .estimate (removed in 0.3)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.estimate

    @property
    def labels(self) -> list[str]:
        """The mechanism's truth labels."""
        return list(self.mechanism.truth_labels)

    @property
    def n(self) -> int:
        """Number of reports."""
        return self.tally.n

    @property
    def std_error(self) -> NDArray[np.float64]:
        """Standard errors, shape (k,): square roots of the variances."""
        return np.sqrt(np.maximum(self._variance, 0.0))

    @property
    def _variance(self) -> NDArray[np.float64]:
        if self.variance is not None:
            return self.variance
        assert self.covariance is not None
        return np.diag(self.covariance)

    def _title(self) -> str:
        kind = _ESTIMATE_NAMES.get(self.method, self.method)
        return f"{self.mechanism!r}: {kind} estimate from n = {self.n} reports"

    @property
    def warnings(self) -> list[str]:
        """Plain-words warnings a table of this estimate must carry (empty if none):
        the texts of :attr:`warned`."""
        return [text for _, text in self.warned]

    @property
    def warned(self) -> list[tuple[type[DeniableWarning], str]]:
        """Each warning with its category (:mod:`deniable.errors`), as :func:`estimate`
        issues it.

        What they say: :func:`~._warned.estimate_warnings`.
        """
        return estimate_warnings(self)

    def _outside_z(self) -> NDArray[np.float64] | None:
        """How many standard errors each moment estimate lies outside [0, 1] (0 inside);
        ``None`` unless a design's moment estimate (:func:`_matrix_outside_z`)."""
        if self.method != "moment":
            return None
        channel = self.mechanism.channel
        return _intervals_of(channel).outside_z(self, channel)

    def one_sided_pvalue(self, value: float = 0.0, category: int = 1) -> float:
        """P-value of the one-sided z test of "the prevalence of ``category`` is at most
        ``value``" against "above it": ``P(Z > (estimate - value) / std_error)`` with the
        plug-in standard error (Wald 1943). A zero-prevalence control's false-positive test.

        Parameters
        ----------
        value : float in [0, 1], default 0
        category : int in [0, k), default 1

        Raises
        ------
        ValueError
            For a ``value`` outside [0, 1], a ``category`` outside the estimate, or a
            standard error of 0 (no test: every report fell in one category).
        """
        from scipy import stats

        check_probability("value", value)
        if not 0 <= category < np.size(self.estimate):
            raise ValueError(f"category must be in [0, {np.size(self.estimate)}), got {category!r}")
        se = float(self.std_error[category])
        if se <= 0:
            raise ValueError("a standard error of 0 has no z test (every report in one category)")
        return float(stats.norm.sf((float(self.estimate[category]) - value) / se))

    def implausible(self) -> NDArray[np.bool_]:
        """Which estimates lie outside [0, 1] by more than :data:`FLAG_Z` standard
        errors, each standard error taken at the nearest prevalence vector inside the
        simplex (the estimate clipped to [0, 1] and renormalised), where sampling could
        have put it: the plug-in standard error at an estimate outside [0, 1] can be 0.
        Such reports fit no prevalence (respondents not following the design, or
        flooding). Shape ``(k,)``; all ``False`` for an oracle, RAPPOR or a method other
        than ``moment``.
        """
        z = self._outside_z()
        if z is None:
            return np.zeros(np.shape(self.estimate), dtype=bool)
        return np.asarray(z > FLAG_Z)

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> Summary:
        """Plain-text table (see :meth:`EstimateResult.summary`), then :attr:`warnings`."""
        table = super().summary(confidence_level, method or self.default_interval_method)
        return table.with_lines(f"warning: {w}" for w in self.warnings)

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval[NDArray[np.float64]]:
        """Confidence (or credible) interval for each category, clipped to [0, 1].

        Parameters
        ----------
        confidence_level : float in (0, 1), default 0.95
        method : str, optional
            ``normal``, ``wilson``, ``agresti_coull``, ``beta`` (Clopper-Pearson),
            ``jeffreys``, ``feldman_cousins``, ``chebyshev`` or ``bayes`` (see
            :mod:`deniable.estimation`). Default: ``bayes`` for a Bayesian
            estimate, else ``feldman_cousins`` where it is defined (binary designs,
            k-ary RR), ``wilson`` for binomial support counts (``feldman_cousins`` on
            request, up to ``MAX_UNIFIED_SUPPORT_CELLS`` reports times values), else
            ``normal`` (power-constrained for designs varying by respondent).

        Returns
        -------
        ConfidenceInterval
            ``low`` and ``high``, ndarrays of shape (k,).

        Raises
        ------
        ValueError
            For a confidence level outside (0, 1), an unknown method, or a method that
            does not apply to this mechanism.
        """
        level = check_confidence_level(confidence_level)
        if method is None:
            method = self.default_interval_method
        if method not in INTERVAL_METHODS:
            raise ValueError(f"method must be one of {', '.join(INTERVAL_METHODS)}, got {method!r}")
        channel = self.mechanism.channel
        return _intervals_of(channel).interval(self, channel, method, level)

    def _check_bayes_boundary(
        self,
        channel: MatrixChannel,
        low: NDArray[np.float64],
        high: NDArray[np.float64],
        level: float,
    ) -> None:
        """Warn when the credible interval leaves out 0 or 1 where the default
        (Feldman-Cousins, at least the level everywhere) keeps it: the case in which
        credible intervals under-cover (docs/coverage.md)."""
        from ._coverage_warning import boundary_left_out

        if affine_map(channel) is None:
            return
        assert isinstance(self.tally, Tally)
        fc_low, fc_high = prevalence_intervals(
            channel, self.tally.counts[None, :], "feldman_cousins", level
        )
        left_out = boundary_left_out(low, high, fc_low[0], fc_high[0])
        out = [
            f"{label!r} ({'0' if lo > 0 else '1'})"
            for label, lo, flag in zip(self.labels, low, left_out, strict=True)
            if flag
        ]
        if out:
            warnings.warn(
                f"the credible interval leaves out a boundary the data do not rule out, for "
                f"{', '.join(out)}: near the boundary credible intervals under-cover "
                "(docs/coverage.md); use feldman_cousins, which covers at least the level "
                "at every prevalence",
                IntervalCoverageWarning,
                stacklevel=4,
            )

    @property
    def default_interval_method(self) -> str:
        """The interval method used when none is named."""
        if self.method == "bayes":
            return "bayes"
        channel = self.mechanism.channel
        return _intervals_of(channel).default(self, channel)

    def to_dict(
        self,
        confidence_level: float = 0.95,
        method: str | None = None,
        *,
        methods: tuple[str, ...] = (),
    ) -> dict[str, JSON]:
        """The one JSON shape (:meth:`EstimateResult.to_dict`) plus ``mechanism``,
        ``estimator`` (moment, mle, bayes) and ``counts``; with several ``methods``, also
        ``intervals``, one interval dict per method (``interval`` is the first)."""
        chosen = method or (methods[0] if methods else None)
        out = super().to_dict(confidence_level, chosen)
        out |= {
            "mechanism": self.mechanism.to_dict(),
            "estimator": self.method,
            "counts": self.tally.counts.tolist(),
        }
        if len(methods) > 1:
            out["intervals"] = [
                interval_dict(self.confidence_interval(confidence_level, m), m, confidence_level)
                for m in methods
            ]
        return out


#: Largest ``n x k`` (reports times values) for which an oracle's ``feldman_cousins``
#: interval is computed (about 20 ms per value at n = 10^6 on 2 cores).
MAX_UNIFIED_SUPPORT_CELLS = 10**9


@dataclass(frozen=True)
class RapporEstimate(PrevalenceEstimate):
    """RAPPOR's decoded candidate frequencies (Erlingsson, Pihur & Korolova 2014).

    Attributes
    ----------
    detected : ndarray of bool, shape (M,)
        ``estimate / std_error > z_{1 - alpha / M}`` (one-sided, Bonferroni over the
        ``M`` candidates).
    alpha : float in (0, 1)
        The family-wise significance level of ``detected``.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Rappor, estimate
    >>> rappor = Rappor(n_bloom_bits=32, h=2, n_cohorts=4).with_candidates(["a", "b", "c"])
    >>> reports = rappor.randomize(["a"] * 3000 + ["b"] * 1000, rng=np.random.default_rng(0))
    >>> result = estimate(rappor, reports)
    >>> type(result).__name__, result.labels
    ('RapporEstimate', ['a', 'b', 'c'])
    """

    detected: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    alpha: float = 0.05


def _support_interval(
    result: PrevalenceEstimate,
    channel: SupportChannel,
    tally: SupportTally,
    method: str,
    level: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Intervals for oracle frequencies.

    ``normal``: Wald. ``wilson`` etc.: a binomial interval for the support share
    ``C_v / n`` (a sum of independent Bernoulli draws) mapped through the affine
    inverse ``f = (lam - q*) / (p* - q*)``. ``feldman_cousins``: the unified interval
    of that binomial share on its range ``[q*, p*]`` (each value is then a binary
    design with ``Pr(support | v) = p*``, ``Pr(support | not v) = q*``), so coverage is
    at least the level for every frequency; its cost grows as ``n k``, so it is
    refused above :data:`MAX_UNIFIED_SUPPORT_CELLS`. ``chebyshev``: the worst-case
    variance.
    """
    p, q = channel.p_star, channel.q_star
    if method == "normal":
        return wald_interval(result.estimate, result.std_error, level)
    if method == "chebyshev":
        center = (tally.shares - q) / (p - q)
        worst = result.mechanism.worst_case_variance  # type: ignore[attr-defined]
        half = np.full_like(center, math.sqrt(worst / (tally.n * (1.0 - level))))
        return center - half, center + half
    if method == "bayes":
        raise ValueError("interval method 'bayes' is not available for frequency oracles")
    if tally.scale != 1:
        raise ValueError(
            f"interval method {method!r} needs binomial support counts; this oracle's "
            "reports carry half supports (Hadamard response with several blocks): "
            "use 'normal' or 'chebyshev'"
        )
    if method == "feldman_cousins":
        cells = tally.n * tally.counts.size
        if cells > MAX_UNIFIED_SUPPORT_CELLS:
            raise ValueError(
                f"feldman_cousins for an oracle costs about n x k (here {cells:.3g}); "
                f"at most {MAX_UNIFIED_SUPPORT_CELLS:.0e} is allowed: use 'wilson' (the "
                "default) or 'normal'"
            )
        from ._unified import unified_share_interval

        lo_s, hi_s = unified_share_interval(
            tally.counts, np.full(tally.counts.shape, tally.n), min(p, q), max(p, q), level
        )
    else:
        lo_s, hi_s = share_interval(
            method, tally.counts, np.full(tally.counts.shape, tally.n), level
        )
    return share_to_prevalence(
        lo_s, hi_s, -q / (p - q), 1 / (p - q), snap=method == "feldman_cousins"
    )


def _matrix_interval(
    result: PrevalenceEstimate, channel: MatrixChannel, method: str, level: float
) -> ConfidenceInterval[NDArray[np.float64]]:
    """A design's intervals (:func:`~deniable.estimation._intervals.prevalence_intervals`),
    power-constrained for designs varying by respondent, the credible interval checked
    at the boundaries; a warning where the method's coverage falls short
    (:func:`~deniable.estimation._coverage_warning.coverage_warning`)."""
    if result.boundary_std_error is None:
        from ._coverage_warning import coverage_warning
        from ._normal_theory import moment_batch

        assert isinstance(result.tally, Tally)
        unbiased, _ = moment_batch(channel, result.tally.counts[None, :])
        message = coverage_warning(
            channel,
            result.n,
            method,
            level,
            unbiased[0],
            result.prior,
            repr(result.mechanism),
            tuple(str(label) for label in result.labels),
        )
        if message is not None:
            warnings.warn(message, IntervalCoverageWarning, stacklevel=3)
    assert isinstance(result.tally, Tally)
    low, high = prevalence_intervals(
        channel,
        result.tally.counts[None, :],
        method,
        level,
        estimate=result.estimate[None, :],
        variance=result._variance[None, :],
        prior=result.prior,
        posterior=None if result.posterior is None else result.posterior[None],
    )
    if method == "bayes":
        result._check_bayes_boundary(channel, low[0], high[0], level)
    if method == "normal" and result.boundary_std_error is not None:
        # power constraint: no interval claims more precision near a boundary
        # than an estimate at that boundary would have (Cowan et al. 2011)
        reach = np.minimum(z_quantile(level) * result.boundary_std_error, 1.0)
        high[0] = np.maximum(high[0], reach)
        low[0] = np.minimum(low[0], 1.0 - reach[::-1])
    return ConfidenceInterval(low[0], high[0])


def _matrix_outside_z(
    result: PrevalenceEstimate, channel: MatrixChannel
) -> NDArray[np.float64] | None:
    """How many standard errors each moment estimate lies outside [0, 1] (0 inside),
    each standard error taken at the nearest prevalence vector inside the simplex (the
    estimate clipped to [0, 1] and renormalised)."""
    from ._normal_theory import moment_covariance

    estimate = np.asarray(result.estimate, dtype=np.float64)
    inside = np.clip(estimate, 0.0, 1.0)
    total = inside.sum()
    inside = inside / total if total > 0 else np.full_like(inside, 1 / inside.size)
    cov = moment_covariance(channel.inverse, channel.matrix @ inside, result.n)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    distance = np.maximum(-estimate, estimate - 1.0).clip(min=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(distance > 0, distance / se, 0.0)
    return np.asarray(z, dtype=np.float64)


def _matrix_default(result: PrevalenceEstimate, channel: MatrixChannel) -> str:
    return "feldman_cousins" if affine_map(channel) is not None else "normal"


def _oracle_interval(
    result: PrevalenceEstimate, channel: SupportChannel, method: str, level: float
) -> ConfidenceInterval[NDArray[np.float64]]:
    assert isinstance(result.tally, SupportTally)
    low, high = _support_interval(result, channel, result.tally, method, level)
    return ConfidenceInterval(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0))


def _oracle_default(result: PrevalenceEstimate, channel: SupportChannel) -> str:
    return "wilson" if result.method == "moment" and channel.scale == 1 else "normal"


def _bloom_interval(
    result: PrevalenceEstimate, channel: BloomChannel, method: str, level: float
) -> ConfidenceInterval[NDArray[np.float64]]:
    if method != "normal":
        raise ValueError("RAPPOR estimates have only 'normal' (Wald) intervals")
    low, high = wald_interval(result.estimate, result.std_error, level)
    return ConfidenceInterval(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0))


def _nowhere(result: PrevalenceEstimate, channel: Any) -> None:
    return None


class _Intervals(NamedTuple):
    """A prevalence channel's intervals: ``interval(result, channel, method, level)``,
    ``default(result, channel)`` (the method used when none is named), and
    ``outside_z(result, channel)`` (how far a moment estimate lies outside [0, 1], in
    standard errors; None where the channel does not say)."""

    interval: Callable[[PrevalenceEstimate, Any, str, float], ConfidenceInterval[Any]]
    default: Callable[[PrevalenceEstimate, Any], str]
    outside_z: Callable[[PrevalenceEstimate, Any], NDArray[np.float64] | None] = _nowhere


#: The intervals of each channel whose estimate is a :class:`PrevalenceEstimate`
#: (looked up by the channel, never by the mechanism's class).
_INTERVALS: dict[type, _Intervals] = {
    MatrixChannel: _Intervals(_matrix_interval, _matrix_default, _matrix_outside_z),
    SupportChannel: _Intervals(_oracle_interval, _oracle_default),
    BloomChannel: _Intervals(_bloom_interval, lambda result, channel: "normal"),
}


def _intervals_of(channel: Any) -> _Intervals:
    return _INTERVALS[type(channel)]
