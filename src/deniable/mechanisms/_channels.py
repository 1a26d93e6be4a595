"""The channels from truths to reports: what each mechanism's randomization is.

Every mechanism names its channel (:attr:`Mechanism.channel
<deniable.mechanisms._protocol.Mechanism.channel>`): a small frozen record of the law
from a truth to a report (a misclassification matrix, a pair of support
probabilities). The channel is the whole of what estimation needs to know about a
mechanism's randomization; the arithmetic that inverts each channel lives in
:mod:`deniable.estimation`, which :func:`deniable.estimation.estimate` looks up by the
channel and never by the mechanism's class. So the layers import one way
(``mechanisms`` < ``estimation``), and building or randomizing with a mechanism loads
no estimator.

=====================  ==========================================  =====================
channel                mechanisms                                  estimate
=====================  ==========================================  =====================
``MatrixChannel``      designs, k-ary RR (a misclassification      ``PrevalenceEstimate``
                       matrix; Chaudhuri & Mukerjee 1988)
``SupportChannel``     unary encoding, local hashing, Hadamard     ``PrevalenceEstimate``
                       response (Wang, Blocki, Li & Jha 2017)
``BloomChannel``       RAPPOR (Erlingsson, Pihur & Korolova 2014)  ``RapporEstimate``
``MeanChannel``        Duchi, piecewise, hybrid, 1BitMean          ``MeanEstimate``
``BucketChannel``      dBitFlip (Ding, Kulkarni & Yekhanin 2017)   ``HistogramEstimate``
``PrefixChannel``      the prefix extending method (PEM;           ``PrefixHeavyHitters``
                       Wang, Li & Jha 2021) on strings
``BytePrefixChannel``  PEM on the bytes of UTF-8 strings           ``PrefixHeavyHitters``
=====================  ==========================================  =====================
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CHANNELS",
    "BloomChannel",
    "BucketChannel",
    "BytePrefixChannel",
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


class _Truths:
    """What a channel's truths are, so that callers ask the channel rather than test its
    class: ``frequency_oracle`` (values of a large domain, each report supporting some)
    and ``string_truths`` (strings: RAPPOR decodes them against candidates, PEM finds
    them)."""

    frequency_oracle: ClassVar[bool] = False
    string_truths: ClassVar[bool] = False


@dataclass(frozen=True)
class MatrixChannel(_Truths):
    """A finite channel: the misclassification matrix ``P[r, t] = Pr(report r | truth t)``.

    Attributes
    ----------
    matrix : ndarray, shape (m, k), float64
        Column-stochastic (Chaudhuri & Mukerjee 1988).

    Examples
    --------
    >>> from deniable import Warner
    >>> Warner(p=0.75).channel.matrix.tolist()
    [[0.75, 0.25], [0.25, 0.75]]
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


@dataclass(frozen=True)
class SupportChannel(_Truths):
    """A frequency oracle's channel (Wang, Blocki, Li & Jha 2017).

    Attributes
    ----------
    p_star : float in [0, 1]
        ``Pr(a report supports v | truth = v)``.
    q_star : float in [0, 1]
        ``Pr(a report supports v | truth != v)``; ``p_star > q_star``.
    scale : {1, 2}
        2 when reports carry half supports (Hadamard response with several blocks).

    Examples
    --------
    >>> from deniable import LocalHashing
    >>> channel = LocalHashing(k=10, epsilon=1.0).channel
    >>> round(channel.p_star, 4), channel.q_star
    (0.4754, 0.25)
    """

    frequency_oracle: ClassVar[bool] = True

    p_star: float
    q_star: float
    scale: int = 1


@dataclass(frozen=True)
class BloomChannel(_Truths):
    """RAPPOR's channel on each Bloom-filter bit (Erlingsson, Pihur & Korolova 2014).

    Attributes
    ----------
    p_star : float in [0, 1]
        ``Pr(report bit = 1 | Bloom bit = 1)``.
    q_star : float in [0, 1]
        ``Pr(report bit = 1 | Bloom bit = 0)``.

    Examples
    --------
    >>> from deniable import Rappor
    >>> Rappor(n_bloom_bits=16, h=2, n_cohorts=2).channel
    BloomChannel(p_star=0.6875, q_star=0.5625)
    """

    frequency_oracle: ClassVar[bool] = True
    string_truths: ClassVar[bool] = True

    p_star: float
    q_star: float


@dataclass(frozen=True)
class MeanChannel(_Truths):
    """A numeric mechanism's channel: reports whose debiased values are unbiased.

    ``E[debias(report) | x] = x`` for every value ``x`` in ``[low, high]`` (Duchi,
    Jordan & Wainwright 2018; Wang et al. 2019; Ding, Kulkarni & Yekhanin 2017).

    Attributes
    ----------
    low, high : float
        The range of the values, in their units.

    Examples
    --------
    >>> from deniable.mechanisms import DuchiMean
    >>> DuchiMean(1.0, low=0.0, high=10.0).channel
    MeanChannel(low=0.0, high=10.0)
    """

    low: float
    high: float


@dataclass(frozen=True)
class BucketChannel(_Truths):
    """dBitFlip's channel on each sampled bucket (Ding, Kulkarni & Yekhanin 2017).

    Attributes
    ----------
    p_star, q_star : float in [0, 1]
        ``Pr(bit = 1 | value in the bucket)`` and ``Pr(bit = 1 | value not in it)``.

    Examples
    --------
    >>> from deniable.mechanisms import BucketChannel, DBitFlip
    >>> isinstance(DBitFlip(k=10, epsilon=1.0).channel, BucketChannel)
    True
    """

    p_star: float
    q_star: float


@dataclass(frozen=True)
class PrefixChannel(_Truths):
    """The prefix extending method's channel: local hashing on each level's prefixes.

    Attributes
    ----------
    p_star, q_star : float in [0, 1]
        Each level's local-hashing support probabilities.
    levels : int
        Number of prefix levels.

    Examples
    --------
    >>> from deniable.mechanisms import PrefixExtension
    >>> PrefixExtension(4.0, max_length=3).channel.levels
    1
    """

    string_truths: ClassVar[bool] = True

    p_star: float
    q_star: float
    levels: int


@dataclass(frozen=True)
class BytePrefixChannel(PrefixChannel):
    """PEM on the bytes of UTF-8 strings: local hashing on each level's byte prefixes,
    values of any length up to the mechanism's ``max_bytes`` (its search tests a value
    that ends early on every later level's reports). Its attributes are
    :class:`PrefixChannel`'s.

    Examples
    --------
    >>> from deniable.mechanisms import BytePrefixExtension
    >>> BytePrefixExtension(4.0, max_bytes=8).channel.levels
    4
    """


#: Every channel the estimators invert.
Channel = (
    MatrixChannel
    | SupportChannel
    | BloomChannel
    | MeanChannel
    | BucketChannel
    | PrefixChannel
    | BytePrefixChannel
)
#: The channel classes, for a check that an object is a mechanism's channel.
CHANNELS = (
    MatrixChannel,
    SupportChannel,
    BloomChannel,
    MeanChannel,
    BucketChannel,
    PrefixChannel,
    BytePrefixChannel,
)
