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
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from ..estimation.means import HistogramEstimate, MeanEstimate
    from ..estimation.prefix import PrefixHeavyHitters
    from ..estimation.results import PrevalenceEstimate, RapporEstimate

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


def _only_moment(method: str, prior: ArrayLike | None, options: dict[str, Any], what: str) -> None:
    if method != "moment" or prior is not None:
        raise ValueError(f"{what} has one estimator; leave method and prior at their defaults")
    if options:
        raise TypeError(f"{what} takes no options, got {', '.join(sorted(options))}")


@dataclass(frozen=True)
class MatrixChannel:
    """A finite channel: the misclassification matrix ``P[r, t] = Pr(report r | truth t)``.

    Attributes
    ----------
    matrix : ndarray, shape (m, k), float64
        Column-stochastic (Chaudhuri & Mukerjee 1988).
    """

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

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> PrevalenceEstimate:
        """Moment, maximum-likelihood or Bayes estimate (see :func:`deniable.estimate`)."""
        if options:
            raise TypeError(f"a design takes no options, got {', '.join(sorted(options))}")
        from ..estimation.estimators import estimate_matrix

        return estimate_matrix(mechanism, self, reports, method, prior, rng)


@dataclass(frozen=True)
class SupportChannel:
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

    p_star: float
    q_star: float
    scale: int = 1

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> PrevalenceEstimate:
        """``f_v = (C_v / n - q*) / (p* - q*)`` (``moment``) or EM on the reports (``mle``)."""
        if options:
            raise TypeError(f"an oracle takes no options, got {', '.join(sorted(options))}")
        from ..estimation.estimators import estimate_support

        return estimate_support(mechanism, self, reports, method, prior)


@dataclass(frozen=True)
class BloomChannel:
    """RAPPOR's channel on each Bloom-filter bit (Erlingsson, Pihur & Korolova 2014).

    Attributes
    ----------
    p_star : float in [0, 1]
        ``Pr(report bit = 1 | Bloom bit = 1)``.
    q_star : float in [0, 1]
        ``Pr(report bit = 1 | Bloom bit = 0)``.
    """

    p_star: float
    q_star: float

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> RapporEstimate:
        """Decode the candidates' counts by LASSO + NNLS (Erlingsson et al. 2014)."""
        if method != "moment" or prior is not None:
            raise ValueError("RAPPOR is decoded by LASSO + NNLS; use the default method")
        if options:
            raise TypeError(f"RAPPOR takes no options, got {', '.join(sorted(options))}")
        from ..estimation.rappor import decode_rappor

        return decode_rappor(mechanism, reports)


@dataclass(frozen=True)
class MeanChannel:
    """A numeric mechanism's channel: reports whose debiased values are unbiased.

    ``E[debias(report) | x] = x`` for every value ``x`` in ``[low, high]`` (Duchi,
    Jordan & Wainwright 2018; Wang et al. 2019; Ding, Kulkarni & Yekhanin 2017).

    Attributes
    ----------
    low, high : float
        The range of the values, in their units.
    """

    low: float
    high: float

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> MeanEstimate:
        """The mean of the debiased reports and its standard error."""
        _only_moment(method, prior, options, "a numeric mechanism")
        from ..estimation.means import estimate_mean

        return estimate_mean(mechanism, reports)


@dataclass(frozen=True)
class BucketChannel:
    """dBitFlip's channel on each sampled bucket (Ding, Kulkarni & Yekhanin 2017).

    Attributes
    ----------
    p_star, q_star : float in [0, 1]
        ``Pr(bit = 1 | value in the bucket)`` and ``Pr(bit = 1 | value not in it)``.
    """

    p_star: float
    q_star: float

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> HistogramEstimate:
        """The unbiased bucket histogram and its standard errors."""
        _only_moment(method, prior, options, "dBitFlip")
        from ..estimation.means import estimate_histogram

        return estimate_histogram(mechanism, reports)


@dataclass(frozen=True)
class PrefixChannel:
    """The prefix extending method's channel: local hashing on each level's prefixes.

    Attributes
    ----------
    p_star, q_star : float in [0, 1]
        Each level's local-hashing support probabilities.
    levels : int
        Number of prefix levels.
    """

    p_star: float
    q_star: float
    levels: int

    def estimate(
        self,
        mechanism: Any,
        reports: Any,
        method: str = "moment",
        prior: ArrayLike | None = None,
        *,
        rng: np.random.Generator | int = 0,
        **options: Any,
    ) -> PrefixHeavyHitters:
        """Heavy hitters level by level; options ``threshold`` and ``miss_rate`` (see
        :func:`deniable.estimation.prefix.find_heavy_hitters`)."""
        if method != "moment" or prior is not None:
            raise ValueError("PEM has one estimator; leave method and prior at their defaults")
        unknown = set(options) - {"threshold", "miss_rate"}
        if unknown:
            raise TypeError(f"PEM takes threshold and miss_rate, got {', '.join(sorted(unknown))}")
        from ..estimation.prefix import find_heavy_hitters

        return find_heavy_hitters(mechanism, reports, **options)


#: Every channel the estimators invert.
Channel = (
    MatrixChannel | SupportChannel | BloomChannel | MeanChannel | BucketChannel | PrefixChannel
)
#: The channel classes, for a check that an object is a mechanism's channel.
CHANNELS = (MatrixChannel, SupportChannel, BloomChannel, MeanChannel, BucketChannel, PrefixChannel)
