"""Each channel's arithmetic, looked up by the channel: how :func:`estimate
<deniable.estimation._estimators.estimate>` inverts a mechanism's randomization and
how a prefix search models itself, never asking what class the mechanism is.

A mechanism names its channel (:mod:`deniable.mechanisms`: the law from a truth
to a report, as data); this module holds, for each channel class, the estimator that
inverts it (what it is called in errors, whether it takes ``method`` and ``prior``,
which options it takes) and, for the prefix channels, the search's model of its own
recall. A new channel is a record in ``mechanisms`` and a row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_integer
from ..mechanisms import (
    BloomChannel,
    BucketChannel,
    BytePrefixChannel,
    MatrixChannel,
    MeanChannel,
    PrefixChannel,
    SupportChannel,
)
from ._base import EstimateResult
from ._byte_prefix_search import find_string_heavy_hitters, string_found_model
from ._finite import estimate_matrix, estimate_support
from ._level_search import FoundModel, SearchCost, limit_from_model, plan_cost, plan_search
from ._means import estimate_histogram, estimate_mean
from ._prefix_search import find_heavy_hitters, pem_found_model
from ._rappor_decoding import decode_rappor

__all__ = ["ARITHMETIC", "Arithmetic", "channel_estimate", "detection_limit", "search_cost"]

#: ``run(mechanism, channel, reports, method, prior, rng, options)``.
Run = Callable[
    [Any, Any, Any, str, "ArrayLike | None", "np.random.Generator | int", dict[str, Any]],
    EstimateResult,
]

#: The options of a prefix search (:func:`~deniable.estimation.find_heavy_hitters`).
_SEARCH = ("threshold", "miss_rate", "false_discoveries", "top_k", "max_survivors", "on_overflow")


@dataclass(frozen=True)
class Arithmetic:
    """One channel's estimator.

    Attributes
    ----------
    what : str
        How errors name the channel's mechanisms.
    run : callable
        ``run(mechanism, channel, reports, method, prior, rng, options)`` -> result.
    methods : bool
        Whether ``method`` and ``prior`` are the channel's to choose (else ``moment``
        only, no prior).
    options : tuple of str
        The keyword options the estimator takes.
    found_model : callable, optional
        A prefix channel's model of its search, ``found_model(mechanism, length)``
        (:data:`~deniable.estimation._prefix_search.FoundModel`).
    """

    what: str
    run: Run
    methods: bool = False
    options: tuple[str, ...] = ()
    found_model: Callable[[Any, int | None], FoundModel] | None = None


#: Each channel class's arithmetic.
ARITHMETIC: dict[type, Arithmetic] = {
    MatrixChannel: Arithmetic(
        "a design",
        lambda m, c, r, method, prior, rng, o: estimate_matrix(m, c, r, method, prior, rng),
        methods=True,
    ),
    SupportChannel: Arithmetic(
        "an oracle",
        lambda m, c, r, method, prior, rng, o: estimate_support(m, c, r, method, prior),
        methods=True,
    ),
    BloomChannel: Arithmetic(
        "RAPPOR (decoded by LASSO + NNLS)",
        lambda m, c, r, method, prior, rng, o: decode_rappor(m, r, **o),
        options=("alpha", "seed", "memory_limit"),
    ),
    MeanChannel: Arithmetic(
        "a numeric mechanism", lambda m, c, r, method, prior, rng, o: estimate_mean(m, r)
    ),
    BucketChannel: Arithmetic(
        "dBitFlip", lambda m, c, r, method, prior, rng, o: estimate_histogram(m, r)
    ),
    PrefixChannel: Arithmetic(
        "PEM",
        lambda m, c, r, method, prior, rng, o: find_heavy_hitters(m, r, **o),
        options=_SEARCH,
        found_model=pem_found_model,
    ),
    BytePrefixChannel: Arithmetic(
        "byte-PEM",
        lambda m, c, r, method, prior, rng, o: find_string_heavy_hitters(m, r, **o),
        options=_SEARCH,
        found_model=string_found_model,
    ),
}


def _arithmetic_of(mechanism: Any) -> tuple[Any, Arithmetic]:
    """The mechanism's channel and its arithmetic.

    Raises
    ------
    TypeError
        For an object that is not a deniable mechanism.
    """
    channel = getattr(mechanism, "channel", None)
    rule = ARITHMETIC.get(type(channel))
    if rule is None:
        raise TypeError(
            "mechanism must be a deniable Mechanism (a Design, FrequencyOracle, Rappor, numeric "
            f"mean, DBitFlip or PrefixExtension), got {type(mechanism).__name__}"
        )
    return channel, rule


def channel_estimate(
    mechanism: Any,
    reports: Any,
    method: str,
    prior: ArrayLike | None,
    rng: np.random.Generator | int,
    options: dict[str, Any],
) -> EstimateResult:
    """The estimate from ``mechanism``'s reports by its channel's arithmetic (see
    :func:`deniable.estimate`).

    Raises
    ------
    TypeError
        For an object that is not a mechanism, or an option the channel does not take.
    ValueError
        For a method or prior the channel has no estimator for.
    """
    channel, rule = _arithmetic_of(mechanism)
    if not rule.methods and (method != "moment" or prior is not None):
        raise ValueError(f"{rule.what} has one estimator; leave method and prior at their defaults")
    unknown = sorted(set(options) - set(rule.options))
    if unknown:
        takes = " and ".join(rule.options) or "no options"
        raise TypeError(f"{rule.what} takes {takes}, got {', '.join(unknown)}")
    return rule.run(mechanism, channel, reports, method, prior, rng, options)


def detection_limit(
    pem: Any,
    n: int,
    threshold: float = 0.01,
    recall: float = 0.9,
    *,
    false_discoveries: float = 0.05,
    miss_rate: float = 0.05,
    max_survivors: int | None = None,
    length: int | None = None,
) -> float:
    """The smallest frequency that :func:`~deniable.estimation.find_heavy_hitters`
    (or byte-PEM's :func:`~deniable.estimation.find_string_heavy_hitters`)
    finds with probability ``recall`` from ``n`` reports, before any are collected.

    From the variance of each level's estimate (``n / levels`` reports a level, local
    hashing's ``s (1 - s) / (n_l (p* - q*)^2)``): a value must survive each level's
    pruning (its upper bound reaches ``threshold``; where more than ``max_survivors``
    prefixes are tested, its estimate must also beat the largest null ones kept) and
    pass the last level's test of ``frequency <= threshold / 2`` at level
    ``false_discoveries / m``. Normal approximation; the probability is solved for the
    frequency by bisection.

    Parameters
    ----------
    pem : PrefixExtension or BytePrefixExtension
    n : int >= 1
        Reports to be collected (all levels).
    threshold, false_discoveries, miss_rate, max_survivors
        As for :func:`~deniable.estimation.find_heavy_hitters`.
    recall : float in (0, 1), default 0.9
    length : int in 0..max_bytes, optional
        BytePrefixExtension only: the value's length in bytes of UTF-8 (default
        ``max_bytes``). A value that ends before the last level is tested on the
        reports of every level after the one that admitted it
        (:func:`~deniable.estimation.find_string_heavy_hitters`), so short
        values are found at lower frequencies.

    Returns
    -------
    float
        A frequency in (0, 1], or ``inf`` when no frequency reaches ``recall`` (for
        example a recall above ``(1 - miss_rate) ** (levels - 1)`` at a low threshold).

    Raises
    ------
    ValueError
        For a probability outside (0, 1), ``n < 1``, or a ``length`` outside
        ``0..max_bytes`` (or given for PEM).
    TypeError
        For a mechanism that is not PEM or byte-PEM.

    Examples
    --------
    >>> from deniable.estimation import detection_limit
    >>> from deniable.mechanisms import PrefixExtension
    >>> round(detection_limit(PrefixExtension(4.0, max_length=3), 100_000, threshold=0.01), 4)
    0.0107
    """
    _, rule = _arithmetic_of(pem)
    if rule.found_model is None:
        raise TypeError(f"detection_limit takes PEM or byte-PEM, got {type(pem).__name__}")
    model = rule.found_model(pem, length)
    args = (threshold, recall, false_discoveries, miss_rate, max_survivors)
    return limit_from_model(model, n, *args)


def search_cost(
    pem: Any,
    n: int,
    threshold: float = 0.01,
    *,
    false_discoveries: float = 0.05,
    miss_rate: float = 0.05,
    top_k: int | None = None,
    max_survivors: int | None = None,
) -> SearchCost:
    """What :func:`~deniable.estimation.find_heavy_hitters` (or byte-PEM's
    :func:`~deniable.estimation.find_string_heavy_hitters`) will cost on ``n``
    reports, before any are collected: a sibling of :func:`detection_limit`.

    Each level tests the extensions of the parents the level before kept. The pruning's
    noise test (:mod:`deniable.estimation._level_search`) keeps, in expectation, at most
    ``1 / threshold`` prefixes of frequency 0 a level; with the ``1 / threshold`` that
    can be frequent that bounds the expected candidates of every level by a function of
    ``n``, epsilon and the threshold (the chance that a prefix of frequency 0 passes is
    computed exactly from the level's binomial law). The cap (``max_survivors``) bounds
    them in every case.

    Parameters
    ----------
    pem : PrefixExtension or BytePrefixExtension
    n : int >= 1
        Reports to be collected (all levels).
    threshold, false_discoveries, miss_rate, top_k, max_survivors
        As for :func:`~deniable.estimation.find_heavy_hitters`.

    Returns
    -------
    SearchCost
        ``reports``, ``candidates`` (expected) and ``candidates_bound`` per level,
        arrays of shape (levels,), float64; ``pairs`` and ``pairs_bound``, the
        report-candidate pairs. ``str()`` prints them in one line.

    Raises
    ------
    ValueError
        For a probability outside (0, 1), ``n < 1``, or ``top_k`` or
        ``max_survivors`` below 1.
    TypeError
        For a mechanism that is not PEM or byte-PEM.

    Examples
    --------
    >>> from deniable.estimation import search_cost
    >>> from deniable.mechanisms import PrefixExtension
    >>> cost = search_cost(PrefixExtension(1.0, max_length=6), 10**6, threshold=0.01)
    >>> cost.candidates_bound.tolist()
    [64000.0, 640000.0, 16000.0]
    >>> bool(cost.candidates[1] <= 200 * 1600)
    True
    """
    _, rule = _arithmetic_of(pem)
    if rule.found_model is None:
        raise TypeError(f"search_cost takes PEM or byte-PEM, got {type(pem).__name__}")
    n = check_integer("n", n, minimum=1)
    plan = plan_search(threshold, miss_rate, false_discoveries, top_k, max_survivors, "keep")
    return plan_cost(pem, n, plan)
