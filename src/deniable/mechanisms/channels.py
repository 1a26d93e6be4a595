"""The channels from truths to reports, each carrying its own arithmetic.

Every mechanism names its channel (:attr:`Mechanism.channel
<deniable.mechanisms.protocol.Mechanism.channel>`), and the channel knows how to turn
the mechanism's reports (or their tally) into an estimate:
:func:`deniable.estimation.estimate` calls ``mechanism.channel.estimate(mechanism,
reports, ...)`` and never asks what the mechanism is.

==================  ==========================================  =====================
channel             mechanisms                                  estimate
==================  ==========================================  =====================
``MatrixChannel``   designs, k-ary RR (a misclassification      ``PrevalenceEstimate``
                    matrix; Chaudhuri & Mukerjee 1988)
``SupportChannel``  unary encoding, local hashing, Hadamard     ``PrevalenceEstimate``
                    response (Wang, Blocki, Li & Jha 2017)
``BloomChannel``    RAPPOR (Erlingsson, Pihur & Korolova 2014)  ``RapporEstimate``
``MeanChannel``     Duchi, piecewise, hybrid, 1BitMean          ``MeanEstimate``
``BucketChannel``   dBitFlip (Ding, Kulkarni & Yekhanin 2017)   ``HistogramEstimate``
``PrefixChannel``   the prefix extending method (PEM;           ``PrefixHeavyHitters``
                    Wang, Li & Jha 2021)
==================  ==========================================  =====================

The arithmetic itself lives in :mod:`deniable.estimation` and is imported when an
estimate is made, so building or randomizing with a mechanism loads none of it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from ..estimation.means import HistogramEstimate, MeanEstimate
    from ..estimation.prefix import PrefixHeavyHitters
    from ..estimation.results import EstimateResult, PrevalenceEstimate, RapporEstimate

__all__ = [
    "CHANNELS",
    "BloomChannel",
    "BucketChannel",
    "Channel",
    "FiniteChannel",
    "MatrixChannel",
    "MeanChannel",
    "PrefixChannel",
    "SupportChannel",
]


class FiniteChannel(Protocol):
    """What the matrix arithmetic reads: a :class:`MatrixChannel`, or any design.

    ``matrix`` (m, k) float64, column-stochastic; ``inverse`` its left inverse (k, m).
    """

    @property
    def matrix(self) -> NDArray[np.float64]: ...

    @property
    def inverse(self) -> NDArray[np.float64]: ...

    @property
    def n_truths(self) -> int: ...

    @property
    def n_reports(self) -> int: ...


class _Estimating:
    """What every channel shares: ``estimate`` checks the method, the prior and the
    options against what the channel takes, then runs the channel's arithmetic."""

    #: How errors name the channel's mechanisms.
    _what: ClassVar[str] = "this mechanism"
    #: Whether ``method`` and ``prior`` are the channel's to choose (else moment only).
    _methods: ClassVar[bool] = False
    #: The options (keyword arguments) the arithmetic takes.
    _options: ClassVar[tuple[str, ...]] = ()

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> EstimateResult:
        """The estimate from ``mechanism``'s reports or their tally (see
        :func:`deniable.estimate`).

        Raises
        ------
        ValueError
            For a method or prior the channel has no estimator for.
        TypeError
            For an option the channel does not take.
        """
        if not self._methods and (method != "moment" or prior is not None):
            raise ValueError(
                f"{self._what} has one estimator; leave method and prior at their defaults"
            )
        unknown = sorted(set(options) - set(self._options))
        if unknown:
            takes = " and ".join(self._options) or "no options"
            raise TypeError(f"{self._what} takes {takes}, got {', '.join(unknown)}")
        return self._arithmetic(mechanism, reports, method, prior, rng, options)

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> EstimateResult:
        raise NotImplementedError


@dataclass(frozen=True)
class MatrixChannel(_Estimating):
    """A finite channel: the misclassification matrix ``P[r, t] = Pr(report r | truth t)``.

    Attributes
    ----------
    matrix : ndarray, shape (m, k), float64
        Column-stochastic (Chaudhuri & Mukerjee 1988).
    """

    _what = "a design"
    _methods = True

    matrix: NDArray[np.float64]

    @property
    def n_truths(self) -> int:
        """``k``, the number of truth categories."""
        return int(self.matrix.shape[1])

    @property
    def n_reports(self) -> int:
        """``m``, the number of report symbols."""
        return int(self.matrix.shape[0])

    @functools.cached_property
    def inverse(self) -> NDArray[np.float64]:
        """The left inverse ``P^+`` (Moore-Penrose), shape (k, m), float64."""
        return np.asarray(np.linalg.pinv(self.matrix), dtype=np.float64)

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> PrevalenceEstimate:
        """Moment, maximum-likelihood or Bayes estimate (see :func:`deniable.estimate`)."""
        from ..estimation.estimators import estimate_matrix

        return estimate_matrix(mechanism, self, reports, method, prior, rng)


@dataclass(frozen=True)
class SupportChannel(_Estimating):
    """A frequency oracle's channel (Wang, Blocki, Li & Jha 2017).

    Attributes
    ----------
    p_star : float in [0, 1]
        ``Pr(a report supports v | truth = v)``.
    q_star : float in [0, 1]
        ``Pr(a report supports v | truth != v)``; ``p_star > q_star``.
    scale : {1, 2}
        2 when reports carry half supports (Hadamard response with several blocks).
    """

    _what = "an oracle"
    _methods = True

    p_star: float
    q_star: float
    scale: int = 1

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> PrevalenceEstimate:
        """``f_v = (C_v / n - q*) / (p* - q*)`` (``moment``) or EM on the reports (``mle``)."""
        from ..estimation.estimators import estimate_support

        return estimate_support(mechanism, self, reports, method, prior)


@dataclass(frozen=True)
class BloomChannel(_Estimating):
    """RAPPOR's channel on each Bloom-filter bit (Erlingsson, Pihur & Korolova 2014).

    Attributes
    ----------
    p_star : float in [0, 1]
        ``Pr(report bit = 1 | Bloom bit = 1)``.
    q_star : float in [0, 1]
        ``Pr(report bit = 1 | Bloom bit = 0)``.
    """

    _what = "RAPPOR (decoded by LASSO + NNLS)"
    _options = ("alpha", "seed", "memory_limit")

    p_star: float
    q_star: float

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> RapporEstimate:
        """Decode the candidates' counts by LASSO + NNLS (Erlingsson et al. 2014);
        options ``alpha``, ``seed`` and ``memory_limit`` (see
        :func:`deniable.estimation.rappor.decode_rappor`)."""
        from ..estimation.rappor import decode_rappor

        return decode_rappor(mechanism, reports, **options)


@dataclass(frozen=True)
class MeanChannel(_Estimating):
    """A numeric mechanism's channel: reports whose debiased values are unbiased.

    ``E[debias(report) | x] = x`` for every value ``x`` in ``[low, high]`` (Duchi,
    Jordan & Wainwright 2018; Wang et al. 2019; Ding, Kulkarni & Yekhanin 2017).

    Attributes
    ----------
    low, high : float
        The range of the values, in their units.
    """

    _what = "a numeric mechanism"

    low: float
    high: float

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> MeanEstimate:
        """The mean of the debiased reports and its standard error."""
        from ..estimation.means import estimate_mean

        return estimate_mean(mechanism, reports)


@dataclass(frozen=True)
class BucketChannel(_Estimating):
    """dBitFlip's channel on each sampled bucket (Ding, Kulkarni & Yekhanin 2017).

    Attributes
    ----------
    p_star, q_star : float in [0, 1]
        ``Pr(bit = 1 | value in the bucket)`` and ``Pr(bit = 1 | value not in it)``.
    """

    _what = "dBitFlip"

    p_star: float
    q_star: float

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> HistogramEstimate:
        """The unbiased bucket histogram and its standard errors."""
        from ..estimation.means import estimate_histogram

        return estimate_histogram(mechanism, reports)


@dataclass(frozen=True)
class PrefixChannel(_Estimating):
    """The prefix extending method's channel: local hashing on each level's prefixes.

    Attributes
    ----------
    p_star, q_star : float in [0, 1]
        Each level's local-hashing support probabilities.
    levels : int
        Number of prefix levels.
    """

    _what = "PEM"
    _options = (
        "threshold",
        "miss_rate",
        "false_discoveries",
        "top_k",
        "max_survivors",
        "on_overflow",
    )

    p_star: float
    q_star: float
    levels: int

    def _arithmetic(
        self,
        mechanism: Any,
        reports: Any,
        method: str,
        prior: ArrayLike | None,
        rng: np.random.Generator | int,
        options: dict[str, Any],
    ) -> PrefixHeavyHitters:
        """Heavy hitters level by level (the mechanism's own ``find_heavy_hitters``);
        options ``threshold``, ``miss_rate``, ``false_discoveries``, ``top_k``,
        ``max_survivors`` and ``on_overflow`` (see
        :func:`deniable.estimation.prefix.find_heavy_hitters`)."""
        found: PrefixHeavyHitters = mechanism.find_heavy_hitters(reports, **options)
        return found


#: Every channel the estimators invert.
Channel = (
    MatrixChannel | SupportChannel | BloomChannel | MeanChannel | BucketChannel | PrefixChannel
)
#: The channel classes, for a check that an object is a mechanism's channel.
CHANNELS = (MatrixChannel, SupportChannel, BloomChannel, MeanChannel, BucketChannel, PrefixChannel)
