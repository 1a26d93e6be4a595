"""Estimators of the prevalence from a tally of randomized reports.

With ``n`` reports and report shares ``lam = c / n``:

``moment`` (default)
    The unbiased moment estimator ``pi_hat = P^+ lam`` (Warner 1965; Chaudhuri &
    Mukerjee 1988), never clipped, with covariance
    ``P^+ (diag(lam) - lam lam^T) P^+T / n``. For the two-coin design
    ``pi_hat = 2 lam_yes - 1/2`` and ``Var = 4 lam (1 - lam) / n`` (between ``3/(4n)``
    and ``1/n``, not the seed text's constant ``3/(4n)``). For a frequency oracle
    ``f_v = (C_v/n - q*) / (p* - q*)`` (Wang et al. 2017).
``mle``
    Maximum likelihood on the simplex by EM, ``pi <- pi * P^T (c / (P pi)) / n``
    (Dempster, Laird & Rubin 1977; van den Hout & van der Heijden 2002). Never negative;
    equal to the moment estimate when that lies inside the simplex. Covariance from the
    Fisher information of the multinomial likelihood.
``bayes``
    Posterior mean under a Dirichlet (Beta) prior, by data augmentation
    (:mod:`deniable.estimation`); covariance = posterior covariance. On k-ary RR without
    a prior given, each category's posterior mean under a uniform prior on it, from the
    exact one-dimensional posterior given its report's count: the prior and posterior
    of its credible interval (the uniform Dirichlet's Beta(1, k - 1) marginal pulled a
    prevalence of 0.88 to 0.65 at n 100 on KaryRR(7, 2), and its interval missed in
    75% of surveys). Those means need not sum to 1; the covariance is then the
    posterior variances with the moment estimator's correlations.

:func:`estimate` takes any :class:`~deniable.mechanisms.Mechanism` and dispatches on
its channel (:mod:`deniable.mechanisms`), never on its class: each channel's
arithmetic is looked up in :mod:`deniable.estimation`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms import CategoricalMechanism, Mechanism
from ._arithmetic import channel_estimate
from ._estimates import EstimateResult, PrevalenceEstimate
from ._finite import ESTIMATION_METHODS, EstimationMethod, as_tally
from ._pooled import boundary_std_errors, pooled_design, pooled_moment

if TYPE_CHECKING:
    from ..mechanisms import (
        BytePrefixExtension,
        DBitFlip,
        NumericMechanism,
        PrefixExtension,
        Rappor,
    )
    from ._estimates import RapporEstimate
    from ._level_search import PrefixHeavyHitters
    from ._means import HistogramEstimate, MeanEstimate

__all__ = [
    "ESTIMATION_METHODS",
    "EstimationMethod",
    "estimate",
]


@overload
def estimate(
    mechanism: NumericMechanism,
    reports: Any,
    method: str = ...,
    prior: None = ...,
    *,
    rng: np.random.Generator | int = ...,
    groups: None = ...,
) -> MeanEstimate: ...


@overload
def estimate(
    mechanism: DBitFlip,
    reports: Any,
    method: str = ...,
    prior: None = ...,
    *,
    rng: np.random.Generator | int = ...,
    groups: None = ...,
) -> HistogramEstimate: ...


@overload
def estimate(
    mechanism: PrefixExtension | BytePrefixExtension,
    reports: Any,
    method: str = ...,
    prior: None = ...,
    *,
    rng: np.random.Generator | int = ...,
    groups: None = ...,
    threshold: float = ...,
    miss_rate: float = ...,
    false_discoveries: float = ...,
    top_k: int | None = ...,
    max_survivors: int | None = ...,
    on_overflow: Literal["keep", "raise"] = ...,
) -> PrefixHeavyHitters: ...


@overload
def estimate(
    mechanism: Rappor,
    reports: Any,
    method: str = ...,
    prior: None = ...,
    *,
    rng: np.random.Generator | int = ...,
    groups: None = ...,
) -> RapporEstimate: ...


@overload
def estimate(
    mechanism: CategoricalMechanism[Any, Any] | Mapping[Any, Any],
    reports: Any,
    method: str = ...,
    prior: ArrayLike | None = ...,
    *,
    rng: np.random.Generator | int = ...,
    groups: ArrayLike | None = ...,
) -> PrevalenceEstimate: ...


def estimate(
    mechanism: Mechanism[Any, Any] | Mapping[Any, Any],
    reports: Any,
    method: str = "moment",
    prior: ArrayLike | None = None,
    *,
    rng: np.random.Generator | int = 0,
    groups: ArrayLike | None = None,
    **options: Any,
) -> EstimateResult:
    """Estimate from any mechanism's reports, by its channel's arithmetic.

    A design, an oracle or RAPPOR gives the prevalence of each truth category
    (:class:`PrevalenceEstimate`); a numeric mean mechanism the mean
    (:class:`~deniable.estimation.MeanEstimate`); dBitFlip the bucket histogram
    (:class:`~deniable.estimation.HistogramEstimate`); PEM the heavy hitters
    (:class:`~deniable.estimation.PrefixHeavyHitters`, with ``threshold`` and
    ``miss_rate`` as options). ``estimate`` asks ``mechanism.channel`` to estimate
    (:mod:`deniable.mechanisms`) and never the mechanism's class.

    Parameters
    ----------
    mechanism : Mechanism, or mapping of key to Design
        The design the reports were drawn through (matrix shape (m, k)), or the
        frequency oracle or RAPPOR (with candidates) that produced them. For designs
        varying by respondent, a mapping of key to design (all with the same truths)
        and ``groups``: the reports are then pooled through the stacked design of
        :func:`deniable.estimation._pooled.pooled_design` (its report labels
        ``"key:report"``); ``moment`` is then the least-squares estimator on the
        simplex's plane with the covariance of fixed design sizes
        (:func:`~deniable.estimation._pooled.pooled_moment`), and ``mle`` the pooled
        maximum likelihood (more efficient when the designs differ). Their Wald
        interval (the default) is power-constrained: its upper end is never below
        the one of a moment estimate at 0, and symmetrically at 1.
    reports : array_like of int, shape (n,), or the mechanism's tally
        Report codes ``0..m-1`` (a design), an oracle's reports, RAPPOR reports, or the
        tally they reduce to (:class:`~deniable.tallies.Tally`,
        :class:`~deniable.tallies.SupportTally`, :class:`~deniable.tallies.RapporTally`).
    method : {"moment", "mle", "bayes"}, default "moment"
        Unbiased moment estimator, maximum likelihood (EM), or Bayesian posterior mean
        (data augmentation). Oracles: ``moment`` or ``mle`` (EM on the exact likelihood
        of the reports, :func:`deniable.estimation.oracle_em`; needs the
        reports, not a tally). RAPPOR: ``moment`` only (decoded by LASSO + NNLS).
    prior : array_like, shape (k,), optional
        Dirichlet pseudocounts for ``bayes``; for a binary design ``(a, b)`` = Beta(a, b)
        on "yes". Default uniform (all ones); on k-ary RR, uniform on each category.
    rng : numpy.random.Generator or int, default 0
        Randomness of the posterior sampler: a generator, or the seed of one (default 0,
        so repeated analyses give the same numbers).
    groups : array_like, shape (n,), optional
        Each respondent's design key, with a mapping of designs (and only then).
    **options
        The channel's own options (PEM: ``threshold``, ``miss_rate``); others refuse
        any with TypeError.

    Returns
    -------
    EstimateResult
        :class:`PrevalenceEstimate` (:class:`~deniable.estimation.RapporEstimate`
        for RAPPOR), ``MeanEstimate``, ``HistogramEstimate`` or ``PrefixHeavyHitters``,
        by mechanism (the overloads give each its type).

    Raises
    ------
    TypeError
        For an object that is not a mechanism.
    ValueError
        For an unknown method, a prior given without ``bayes``, or a bad prior.
    ReportValidationError
        For malformed reports, a tally of the wrong size, or no reports at all.

    Examples
    --------
    The per-report debiasing of k-ary randomized response:

    >>> import math
    >>> from deniable.mechanisms import KaryRR
    >>> estimate(KaryRR(k=10, epsilon=math.log(3)), np.array([1])).estimate.round(2).tolist()
    [-0.5, 5.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5]
    """
    result = _estimated(mechanism, reports, method, prior, rng, groups, options)
    for category, text in getattr(result, "warned", ()):  # kept on the result as well
        warnings.warn(text, category, stacklevel=2)
    return result


def _estimated(
    mechanism: Mechanism[Any, Any] | Mapping[Any, Any],
    reports: Any,
    method: str,
    prior: ArrayLike | None,
    rng: np.random.Generator | int,
    groups: ArrayLike | None,
    options: dict[str, Any],
) -> EstimateResult:
    """:func:`estimate`'s work, without issuing the result's warnings."""
    if isinstance(mechanism, Mapping):
        if options:
            raise TypeError(f"designs take no options, got {', '.join(sorted(options))}")
        if groups is None:
            raise ValueError("groups must give each respondent's design key with several designs")
        stacked, codes, blocks = pooled_design(mechanism, groups, reports)
        tally = as_tally(stacked, codes)
        edge = boundary_std_errors(stacked, tally.counts, blocks)
        if method == "moment":  # least squares on sum(pi) = 1, fixed design sizes
            est, cov = pooled_moment(stacked, tally.counts, blocks)
            return PrevalenceEstimate(stacked, tally, method, est, cov, boundary_std_error=edge)
        result = _estimated(stacked, tally, method, prior, rng, None, {})
        assert isinstance(result, PrevalenceEstimate)
        return replace(result, boundary_std_error=edge)
    if groups is not None:
        raise ValueError("groups is used only with a mapping of designs")
    return channel_estimate(mechanism, reports, method, prior, rng, options)
