"""Validation items: a question whose true prevalence is known, asked through a design
to measure what the design gets wrong in aggregate (Höglinger & Diekmann 2017,
"Uncovering a blind spot in sensitive question research: false positives undermine the
crosswise-model RRT", Political Analysis 25(1)).

A *zero-prevalence* item (nobody can truly carry it) measures false positives: any
estimate above 0 is respondents answering "yes" who are not. A *known-prevalence* item
(a share known from a register or the survey's own sampling) measures both: an estimate
below it is false negatives (carriers who deny), above it false positives. Only the
aggregate is measured: which respondent misreported cannot be known, and the server
never links a report to a person.

The test uses the unbiased moment estimate and its exact standard error *at the known
prevalence* (the null hypothesis), not the plug-in one, so an arm whose reports all
fell one way (plug-in standard error 0) is still tested. Its p-values are exact: a
binary design's moment estimate is monotone in the count of reports of the second kind,
which is Binomial(n, lambda) under the null, ``lambda = M[1, 0] (1 - known) + M[1, 1]
known`` (the normal approximation was over-size at small n: 0.073 at nominal 0.05 for
forced response (0.1, 0.2), n 100, known 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import JSON, check_probability
from ...estimation import PrevalenceEstimate

__all__ = ["ValidationCheck", "validation_check"]


@dataclass(frozen=True)
class ValidationCheck:
    """One design's estimate of a validation item against its known prevalence
    (Höglinger & Diekmann 2017).

    Attributes
    ----------
    known : float in [0, 1]
        The item's true prevalence (0: a zero-prevalence control).
    estimate : float
        The unbiased moment estimate (not clipped to [0, 1]).
    difference : float
        ``estimate - known``: above 0, false positives; below, false negatives.
    std_error : float > 0
        The moment estimate's exact standard error were the prevalence ``known``.
    z : float
        ``difference / std_error``.
    pvalue_false_positives, pvalue_false_negatives : float in [0, 1]
        Exact one-sided p-values of "no false positives" (an estimate at least this
        high) and "no false negatives" (at least this low) under the null: binomial
        tails of the count of reports that raise the estimate (their sum is ``1 +``
        the probability of the count observed).
    n : int
        Respondents.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Crosswise, estimate
    >>> from deniable.analysis import validation_check
    >>> zero = estimate(Crosswise(p=0.25), np.array([0] * 110 + [1] * 290))
    >>> check = validation_check(zero, known=0.0)  # 5% claim what nobody carries
    >>> round(check.difference, 3), round(check.std_error, 4)
    (0.05, 0.0433)
    >>> round(check.pvalue_false_positives, 3)
    0.137
    """

    known: float
    estimate: float
    difference: float
    std_error: float
    z: float
    pvalue_false_positives: float
    pvalue_false_negatives: float
    n: int

    def to_dict(self) -> dict[str, JSON]:
        """The attributes, JSON-ready."""
        return {
            "known": self.known,
            "estimate": self.estimate,
            "difference": self.difference,
            "std_error": self.std_error,
            "z": self.z,
            "pvalue_false_positives": self.pvalue_false_positives,
            "pvalue_false_negatives": self.pvalue_false_negatives,
            "n": self.n,
        }


def validation_check(result: PrevalenceEstimate, known: float) -> ValidationCheck:
    """The estimate of a binary validation item against its known prevalence
    (:class:`ValidationCheck`; Höglinger & Diekmann 2017).

    Parameters
    ----------
    result : PrevalenceEstimate
        A binary design's estimate (two answers: the item's prevalence is that of the
        second, "yes").
    known : float in [0, 1]
        The item's true prevalence.

    Returns
    -------
    ValidationCheck

    Raises
    ------
    ValueError
        For ``known`` outside [0, 1], a design with other than two answers, or no
        respondents.

    Examples
    --------
    >>> import numpy as np
    >>> from deniable import Warner, estimate
    >>> from deniable.analysis import validation_check
    >>> known = estimate(Warner(p=0.75), np.array([1] * 260 + [0] * 340))
    >>> check = validation_check(known, known=0.4)  # 0.367: under-reported?
    >>> round(check.difference, 4), round(check.std_error, 4)
    (-0.0333, 0.0406)
    >>> round(check.pvalue_false_negatives, 3)
    0.218
    """
    from ...estimation import moment_batch, moment_covariance
    from ...tallies import Tally

    known = check_probability("known", known)
    channel: Any = result.mechanism.channel  # a design's channel has a matrix
    answers = getattr(channel, "n_truths", None)
    if answers != 2 or getattr(channel, "matrix", None) is None:
        raise ValueError(
            f"validation_check needs a binary design's estimate (two answers), got {answers}"
        )
    if not isinstance(result.tally, Tally):
        raise ValueError("validation_check needs the estimate's tally of reports")
    n = int(result.n)
    if n < 1:
        raise ValueError("validation_check needs at least one respondent")
    counts = np.asarray(result.tally.counts, dtype=np.int64)
    unbiased, _ = moment_batch(channel, counts[None, :])
    shares = channel.matrix @ np.array([1.0 - known, known])
    variance = float(moment_covariance(channel.inverse, shares, n)[1, 1])
    se = math.sqrt(max(variance, 0.0))
    estimate = float(unbiased[0, 1])
    difference = estimate - known
    # a design that reveals the answer at this prevalence (SE 0): any difference is certain
    certain = math.copysign(math.inf, difference) if difference else 0.0
    z = difference / se if se > 0 else certain
    fp, fn = exact_pvalues(np.asarray(channel.matrix, dtype=np.float64), known, n, counts)
    return ValidationCheck(
        known=known,
        estimate=estimate,
        difference=difference,
        std_error=se,
        z=z,
        pvalue_false_positives=fp,
        pvalue_false_negatives=fn,
        n=n,
    )


def exact_pvalues(
    matrix: NDArray[np.float64], known: float, n: int, counts: NDArray[np.int64]
) -> tuple[float, float]:
    """Exact one-sided p-values of "no false positives" and "no false negatives".

    Parameters
    ----------
    matrix : ndarray of float64, shape (2, 2)
        The binary design's ``Pr(report r | answer t)``.
    known : float in [0, 1]
    n : int
        Respondents, ``counts.sum()``.
    counts : ndarray of int64, shape (2,)
        Reports of each kind.

    Returns
    -------
    fp, fn : float in [0, 1]
        ``P(estimate >= observed)`` and ``P(estimate <= observed)`` under the null,
        binomial tails of the count of the report whose share rises with the prevalence
        (both 1 for a design whose reports do not depend on the answer).

    Examples
    --------
    >>> m = np.array([[0.75, 0.25], [0.25, 0.75]])  # Warner(0.75)
    >>> [round(p, 4) for p in exact_pvalues(m, 0.0, 10, np.array([5, 5]))]
    [0.0781, 0.9803]
    """
    from scipy.stats import binom

    slope = float(matrix[1, 1] - matrix[1, 0])
    if slope == 0.0:
        return 1.0, 1.0
    rising = 1 if slope > 0 else 0  # the report whose count the estimate increases with
    share = float(matrix[rising, 0] * (1.0 - known) + matrix[rising, 1] * known)
    y = int(counts[rising])
    upper = float(binom.sf(y - 1, n, share))  # P(Y >= y)
    lower = float(binom.cdf(y, n, share))  # P(Y <= y)
    return upper, lower
