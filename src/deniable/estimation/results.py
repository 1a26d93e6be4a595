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
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..mechanisms.protocol import BloomChannel, MatrixChannel, Mechanism, SupportChannel
from ..tallies import RapporTally, SupportTally, Tally
from ..validation import check_confidence_level
from .common import wald_interval
from .intervals import INTERVAL_METHODS, prevalence_intervals, share_interval
from .variance import affine_map

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ConfidenceInterval",
    "EstimateResult",
    "PrevalenceEstimate",
    "RapporEstimate",
    "summary_table",
]


class ConfidenceInterval(NamedTuple):
    """Lower and upper bounds: ndarrays the shape of the estimate (or floats for a scalar)."""

    low: Any
    high: Any


def summary_table(
    title: str, labels: list[str], columns: dict[str, NDArray[np.float64]], footer: str = ""
) -> str:
    """A plain-text table: one row per label, one column per entry of ``columns``."""
    width = max([len(str(x)) for x in labels] + [8])
    head = f"{'':<{width}}" + "".join(f"{name:>12}" for name in columns)
    rows = [
        f"{label!s:<{width}}" + "".join(f"{float(col[i]):>12.4f}" for col in columns.values())
        for i, label in enumerate(labels)
    ]
    rule = "-" * len(head)
    return "\n".join([title, rule, head, rule, *rows, rule] + ([footer] if footer else []))


class EstimateResult(ABC):
    """The shared vocabulary: ``estimate``, ``std_error``, ``confidence_interval``, ...

    Subclasses give ``estimate``, ``std_error``, ``labels`` and ``confidence_interval``;
    ``summary`` and ``to_frame`` follow.
    """

    if TYPE_CHECKING:  # given by every subclass, as a field or a property

        @property
        def estimate(self) -> Any:
            """Point estimate."""

        @property
        def std_error(self) -> Any:
            """Standard error of :attr:`estimate`, the same shape."""

        @property
        def labels(self) -> list[str]:
            """One label per entry of :attr:`estimate`."""

    @abstractmethod
    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval:
        """Interval for every entry of :attr:`estimate`."""

    def _title(self) -> str:
        return type(self).__name__

    def summary(self, confidence_level: float = 0.95, method: str | None = None) -> str:
        """Plain-text table: estimate, standard error and interval per entry."""
        ci = self.confidence_interval(confidence_level, method)
        return summary_table(
            self._title(),
            self.labels,
            {
                "estimate": np.atleast_1d(self.estimate),
                "std_error": np.atleast_1d(self.std_error),
                "low": np.atleast_1d(ci.low),
                "high": np.atleast_1d(ci.high),
            },
            f"{confidence_level:.0%} intervals",
        )

    def to_frame(self, confidence_level: float = 0.95, method: str | None = None) -> pd.DataFrame:
        """``pandas.DataFrame`` indexed by label: estimate, std_error, low, high."""
        import pandas as pd

        ci = self.confidence_interval(confidence_level, method)
        return pd.DataFrame(
            {
                "estimate": np.atleast_1d(self.estimate),
                "std_error": np.atleast_1d(self.std_error),
                "low": np.atleast_1d(ci.low),
                "high": np.atleast_1d(ci.high),
            },
            index=pd.Index(self.labels, name="category"),
        )


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
    prevalence : ndarray, shape (k,), float64
        Estimated share of each truth category (index 1 = "yes" for binary designs;
        the frequency of each value for an oracle). The moment estimate is unbiased
        and is never clipped, so it can leave [0, 1]. Also :attr:`estimate`.
    covariance : ndarray, shape (k, k), float64, or None
        Estimated covariance of ``prevalence`` (None for frequency oracles, whose
        domains can have millions of values; see ``variance``).
    variance : ndarray, shape (k,), float64, or None
        Estimated variance of each entry when no covariance is kept.
    prior : ndarray, shape (k,), or None
        Dirichlet pseudocounts (``bayes`` only).
    posterior : ndarray, shape (draws, k), or None
        Posterior draws (``bayes`` only).
    iterations : int
        EM iterations used (``mle``), 0 otherwise.
    """

    mechanism: Mechanism
    tally: Tally | SupportTally | RapporTally
    method: str
    prevalence: NDArray[np.float64]
    covariance: NDArray[np.float64] | None
    prior: NDArray[np.float64] | None = None
    posterior: NDArray[np.float64] | None = field(default=None, repr=False)
    iterations: int = 0
    variance: NDArray[np.float64] | None = field(default=None, repr=False)

    @property
    def estimate(self) -> NDArray[np.float64]:
        """The estimated prevalences, shape (k,) (the same array as :attr:`prevalence`)."""
        return self.prevalence

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
        return f"{self.mechanism!r}: {self.method} estimate from n = {self.n} reports"

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval:
        """Confidence (or credible) interval for each category, clipped to [0, 1].

        Parameters
        ----------
        confidence_level : float in (0, 1), default 0.95
        method : str, optional
            ``normal``, ``wilson``, ``agresti_coull``, ``beta`` (Clopper-Pearson),
            ``jeffreys``, ``chebyshev`` or ``bayes`` (see
            :mod:`deniable.estimation.intervals`). Default: ``bayes`` for a Bayesian
            estimate, else ``wilson`` where it is defined (binary designs, k-ary RR,
            binomial support counts), else ``normal``.

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
        if isinstance(channel, BloomChannel):
            if method != "normal":
                raise ValueError("RAPPOR estimates have only 'normal' (Wald) intervals")
            low, high = wald_interval(self.prevalence, self.std_error, level)
        elif isinstance(channel, SupportChannel):
            assert isinstance(self.tally, SupportTally)
            low, high = _support_interval(self, channel, self.tally, method, level)
        else:
            assert isinstance(self.tally, Tally)
            low2, high2 = prevalence_intervals(
                self.mechanism,  # type: ignore[arg-type]
                self.tally.counts[None, :],
                method,
                level,
                estimate=self.prevalence[None, :],
                variance=self._variance[None, :],
                prior=self.prior,
                posterior=None if self.posterior is None else self.posterior[None],
            )
            return ConfidenceInterval(low2[0], high2[0])
        return ConfidenceInterval(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0))

    @property
    def default_interval_method(self) -> str:
        """The interval method used when none is named."""
        if self.method == "bayes":
            return "bayes"
        channel = self.mechanism.channel
        if isinstance(channel, BloomChannel):
            return "normal"
        if isinstance(channel, SupportChannel):
            return "wilson" if self.method == "moment" and channel.scale == 1 else "normal"
        assert isinstance(channel, MatrixChannel)
        return "wilson" if affine_map(self.mechanism) is not None else "normal"  # type: ignore[arg-type]

    def to_dict(
        self, confidence_level: float = 0.95, methods: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """JSON-ready summary: estimate, SE and the intervals by each requested method."""
        methods = methods or (self.default_interval_method,)
        out: dict[str, Any] = {
            "mechanism": self.mechanism.to_dict(),
            "method": self.method,
            "n": self.n,
            "counts": self.tally.counts.tolist(),
            "categories": self.labels,
            "prevalence": self.prevalence.tolist(),
            "std_error": self.std_error.tolist(),
            "confidence_level": confidence_level,
            "intervals": {},
        }
        for m in methods:
            ci = self.confidence_interval(confidence_level, m)
            out["intervals"][m] = {"low": ci.low.tolist(), "high": ci.high.tolist()}
        return out


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
    inverse ``f = (lam - q*) / (p* - q*)``. ``chebyshev``: the worst-case variance.
    """
    p, q = channel.p_star, channel.q_star
    if method == "normal":
        return wald_interval(result.prevalence, result.std_error, level)
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
    lo_s, hi_s = share_interval(method, tally.counts, np.full(tally.counts.shape, tally.n), level)
    return (lo_s - q) / (p - q), (hi_s - q) / (p - q)
