"""Estimators of the prevalence from a tally of randomized reports.

With ``n`` reports and report shares ``lam = c / n``:

``moment`` (default)
    The unbiased moment estimator ``pi_hat = P^+ lam`` (Warner 1965; Chaudhuri &
    Mukerjee 1988), never clipped, with covariance
    ``P^+ (diag(lam) - lam lam^T) P^+T / n``. For the two-coin design
    ``pi_hat = 2 lam_yes - 1/2`` and ``Var = 4 lam (1 - lam) / n`` (between ``3/(4n)``
    and ``1/n``, not the seed text's constant ``3/(4n)``).
``mle``
    Maximum likelihood on the simplex by EM, ``pi <- pi * P^T (c / (P pi)) / n``
    (Dempster, Laird & Rubin 1977; van den Hout & van der Heijden 2002). Never negative;
    equal to the moment estimate when that lies inside the simplex. Covariance from the
    Fisher information of the multinomial likelihood.
``bayes``
    Posterior mean under a Dirichlet (Beta) prior, by data augmentation
    (:mod:`deniable.bayes`); covariance = posterior covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from ._validation import check_confidence_level
from ._variance import affine_map
from .bayes import check_prior, posterior_draws
from .designs import Design
from .errors import ReportValidationError
from .intervals import INTERVAL_METHODS, moment_batch, prevalence_intervals, share_interval
from .oracles import FrequencyOracle, SupportTally
from .rappor import Rappor, RapporTally
from .tally import Tally

__all__ = [
    "ESTIMATION_METHODS",
    "ConfidenceInterval",
    "EstimationMethod",
    "PrevalenceEstimate",
    "estimate",
]

EstimationMethod = Literal["moment", "mle", "bayes"]
ESTIMATION_METHODS: tuple[str, ...] = get_args(EstimationMethod)


class ConfidenceInterval(NamedTuple):
    """Lower and upper bounds, each an ndarray of shape (k,) indexed by truth category."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]


@dataclass(frozen=True)
class PrevalenceEstimate:
    """The estimated distribution of the truth, with its uncertainty.

    Attributes
    ----------
    design : Design or FrequencyOracle
        The design (or frequency oracle) the reports came through.
    tally : Tally or SupportTally
        Report counts, shape (m,), or an oracle's support counts, shape (k,).
    method : {"moment", "mle", "bayes"}
    prevalence : ndarray, shape (k,), float64
        Estimated share of each truth category (index 1 = "yes" for binary designs;
        the frequency of each value for an oracle). The moment estimate is unbiased
        and is never clipped, so it can leave [0, 1].
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

    design: Design | FrequencyOracle | Rappor
    tally: Tally | SupportTally | RapporTally
    method: str
    prevalence: NDArray[np.float64]
    covariance: NDArray[np.float64] | None
    prior: NDArray[np.float64] | None = None
    posterior: NDArray[np.float64] | None = field(default=None, repr=False)
    iterations: int = 0
    variance: NDArray[np.float64] | None = field(default=None, repr=False)

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

    def confidence_interval(
        self, confidence_level: float = 0.95, method: str | None = None
    ) -> ConfidenceInterval:
        """Confidence (or credible) interval for each category, clipped to [0, 1].

        Parameters
        ----------
        confidence_level : float in (0, 1), default 0.95
        method : str, optional
            ``normal``, ``wilson``, ``agresti_coull``, ``beta`` (Clopper-Pearson),
            ``jeffreys``, ``chebyshev`` or ``bayes`` (see :mod:`deniable.intervals`).
            Default: ``bayes`` for a Bayesian estimate, else ``wilson`` where it is
            defined (binary designs, k-ary RR), else ``normal``.

        Returns
        -------
        ConfidenceInterval
            ``low`` and ``high``, ndarrays of shape (k,).

        Raises
        ------
        ValueError
            For a confidence level outside (0, 1), an unknown method, or a binomial
            method on a design it does not apply to.
        """
        level = check_confidence_level(confidence_level)
        if method is None:
            method = self.default_interval_method
        if method not in INTERVAL_METHODS:
            raise ValueError(f"method must be one of {', '.join(INTERVAL_METHODS)}, got {method!r}")
        if isinstance(self.design, Rappor):
            if method != "normal":
                raise ValueError("RAPPOR estimates have only 'normal' (Wald) intervals")
            half = float(stats.norm.ppf(0.5 + level / 2)) * self.std_error
            low, high = self.prevalence - half, self.prevalence + half
            return ConfidenceInterval(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0))
        if isinstance(self.design, FrequencyOracle):
            assert isinstance(self.tally, SupportTally)
            return _oracle_interval(
                self.design, self.tally, self.prevalence, self._variance, method, level
            )
        assert isinstance(self.tally, Tally) and isinstance(self.design, Design)
        var = self._variance[None, :]
        low, high = prevalence_intervals(
            self.design,
            self.tally.counts[None, :],
            method,
            level,
            estimate=self.prevalence[None, :],
            variance=var,
            prior=self.prior,
            posterior=None if self.posterior is None else self.posterior[None],
        )
        return ConfidenceInterval(low[0], high[0])

    @property
    def default_interval_method(self) -> str:
        """The interval method used when none is named."""
        if self.method == "bayes":
            return "bayes"
        if isinstance(self.design, Rappor):
            return "normal"
        if isinstance(self.design, FrequencyOracle):
            binomial = isinstance(self.tally, SupportTally) and self.tally.scale == 1
            return "wilson" if self.method == "moment" and binomial else "normal"
        return "wilson" if affine_map(self.design) is not None else "normal"

    def to_dict(
        self, confidence_level: float = 0.95, methods: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """JSON-ready summary: estimate, SE and the intervals by each requested method."""
        methods = methods or (self.default_interval_method,)
        labels = self.design.truth_labels
        out: dict[str, Any] = {
            "design": self.design.to_dict(),
            "method": self.method,
            "n": self.n,
            "counts": self.tally.counts.tolist(),
            "categories": list(labels),
            "prevalence": self.prevalence.tolist(),
            "std_error": self.std_error.tolist(),
            "confidence_level": confidence_level,
            "intervals": {},
        }
        for m in methods:
            ci = self.confidence_interval(confidence_level, m)
            out["intervals"][m] = {"low": ci.low.tolist(), "high": ci.high.tolist()}
        return out


def estimate(
    design: Design | FrequencyOracle | Rappor,
    reports: ArrayLike | Tally | SupportTally | Any,
    method: str = "moment",
    prior: ArrayLike | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> PrevalenceEstimate:
    """Estimate the prevalence of each truth category from randomized reports.

    Parameters
    ----------
    design : Design or FrequencyOracle
        The design the reports were drawn through (matrix shape (m, k)), or the
        frequency oracle (:mod:`deniable.oracles`, :class:`~deniable.rappor.Rappor`
        with candidates) that produced them.
    reports : array_like of int, shape (n,), or Tally; for an oracle its reports or SupportTally
        Report codes ``0..m-1``, or their tally.
    method : {"moment", "mle", "bayes"}, default "moment"
        Unbiased moment estimator, maximum likelihood (EM), or Bayesian posterior mean
        (data augmentation). Oracles: ``moment`` ``f_v = (C_v/n - q*) / (p* - q*)``
        (Wang et al. 2017) or ``mle`` (EM on the exact likelihood of the reports,
        :func:`deniable.postprocess.oracle_em`; needs the reports, not a tally).
    prior : array_like, shape (k,), optional
        Dirichlet pseudocounts for ``bayes``; for a binary design ``(a, b)`` = Beta(a, b)
        on "yes". Default uniform (all ones).
    rng : numpy.random.Generator, optional
        Randomness of the posterior sampler (default seeded with 0: reproducible).

    Returns
    -------
    PrevalenceEstimate

    Raises
    ------
    ValueError
        For an unknown method, a prior given without ``bayes``, or a bad prior.
    ReportValidationError
        For report codes outside ``0..m-1``, a tally over the wrong number of report
        symbols, or no reports at all.

    Examples
    --------
    The per-report debiasing of k-ary randomized response:

    >>> import math
    >>> from deniable.designs import KaryRR
    >>> estimate(KaryRR(k=10, epsilon=math.log(3)), np.array([1])).prevalence.round(2).tolist()
    [-0.5, 5.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5]
    """
    if isinstance(design, FrequencyOracle):
        return _estimate_oracle(design, reports, method, prior)
    if isinstance(design, Rappor):
        if method != "moment" or prior is not None:
            raise ValueError("RAPPOR is decoded by LASSO + NNLS; use the default method")
        freq, se, _, rtally = design.decode(reports)  # type: ignore[arg-type]
        return PrevalenceEstimate(design, rtally, "lasso+nnls", freq, None, variance=se**2)
    if not isinstance(design, Design):
        raise TypeError(
            f"design must be a deniable Design or FrequencyOracle, got {type(design).__name__}"
        )
    if method not in ESTIMATION_METHODS:
        raise ValueError(f"method must be one of {', '.join(ESTIMATION_METHODS)}, got {method!r}")
    if prior is not None and method != "bayes":
        raise ValueError("prior is used only with method='bayes'")
    tally = _as_tally(design, reports)  # type: ignore[arg-type]
    counts = tally.counts[None, :]
    if method == "moment":
        est, _ = moment_batch(design, counts)
        lam = tally.shares
        Q = design.inverse
        cov = Q @ (np.diag(lam) - np.outer(lam, lam)) @ Q.T / tally.n
        return PrevalenceEstimate(design, tally, method, est[0], cov)
    if method == "mle":
        pi, iterations = em_batch(design, counts)
        cov = _fisher_covariance(design, pi[0], tally.n)
        return PrevalenceEstimate(design, tally, method, pi[0], cov, iterations=iterations)
    alpha = check_prior(design, prior)
    draws = posterior_draws(design, counts, alpha, rng=rng)[0]
    return PrevalenceEstimate(
        design,
        tally,
        method,
        draws.mean(axis=0),
        np.atleast_2d(np.cov(draws, rowvar=False)),
        prior=alpha,
        posterior=draws,
    )


def _estimate_oracle(
    oracle: FrequencyOracle, reports: Any, method: str, prior: ArrayLike | None
) -> PrevalenceEstimate:
    if method not in ("moment", "mle"):
        raise ValueError(f"method must be 'moment' or 'mle' for a frequency oracle, got {method!r}")
    if prior is not None:
        raise ValueError("prior is used only with method='bayes' (not for frequency oracles)")
    tally = reports if isinstance(reports, SupportTally) else oracle.support_counts(reports)
    if tally.counts.size != oracle.k:
        raise ReportValidationError(
            f"support tally has {tally.counts.size} candidates but the oracle has k = {oracle.k}"
        )
    if tally.n == 0:
        raise ReportValidationError("no reports to estimate from (n = 0)")
    p, q = oracle.p_star, oracle.q_star
    if method == "moment":
        f = (tally.shares - q) / (p - q)
        var = oracle.variance(np.clip(f, 0.0, 1.0), tally.n)
        return PrevalenceEstimate(oracle, tally, method, f, None, variance=var)
    if isinstance(reports, SupportTally):
        raise ValueError("method='mle' needs the reports themselves, not their support tally")
    from .postprocess import oracle_em

    f, iterations = oracle_em(oracle, reports)
    var = oracle.variance(f, tally.n)
    return PrevalenceEstimate(oracle, tally, method, f, None, iterations=iterations, variance=var)


def _oracle_interval(
    oracle: FrequencyOracle,
    tally: SupportTally,
    estimate: NDArray[np.float64],
    variance: NDArray[np.float64],
    method: str,
    level: float,
) -> ConfidenceInterval:
    """Intervals for oracle frequencies.

    ``normal``: Wald. ``wilson`` etc.: a binomial interval for the support share
    ``C_v / n`` (a sum of independent Bernoulli draws) mapped through the affine
    inverse ``f = (lam - q*) / (p* - q*)``. ``chebyshev``: the worst-case variance.
    """
    p, q = oracle.p_star, oracle.q_star
    alpha = 1.0 - level
    if method == "normal":
        half = float(stats.norm.ppf(1 - alpha / 2)) * np.sqrt(variance)
        low, high = estimate - half, estimate + half
    elif method == "chebyshev":
        center = (tally.shares - q) / (p - q)
        half = np.full_like(center, math.sqrt(oracle.worst_case_variance / (tally.n * alpha)))
        low, high = center - half, center + half
    elif method == "bayes":
        raise ValueError("interval method 'bayes' is not available for frequency oracles")
    elif tally.scale != 1:
        raise ValueError(
            f"interval method {method!r} needs binomial support counts; this oracle's "
            "reports carry half supports (Hadamard response with several blocks): "
            "use 'normal' or 'chebyshev'"
        )
    else:
        lo_s, hi_s = share_interval(
            method, tally.counts, np.full(tally.counts.shape, tally.n), level
        )
        low, high = (lo_s - q) / (p - q), (hi_s - q) / (p - q)
    return ConfidenceInterval(np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0))


def _as_tally(design: Design, reports: ArrayLike | Tally) -> Tally:
    if isinstance(reports, Tally):
        if reports.n_reports != design.n_reports:
            raise ReportValidationError(
                f"tally has {reports.n_reports} report symbols "
                f"but the design has {design.n_reports}"
            )
        tally = reports
    else:
        tally = Tally.from_reports(reports, design.n_reports)
    if tally.n == 0:
        raise ReportValidationError("no reports to estimate from (n = 0)")
    return tally


def em_batch(
    design: Design,
    counts: NDArray[np.int64],
    *,
    tol: float = 1e-12,
    max_iterations: int = 100_000,
) -> tuple[NDArray[np.float64], int]:
    """Maximum-likelihood prevalences on the simplex for tallies ``counts`` (S, m).

    Square designs whose moment estimate lies inside the simplex return it directly
    (it is then the MLE); the others run EM from the uniform distribution until no
    entry moves by more than ``tol``. Returns estimates (S, k) and the iterations used.
    """
    P = design.matrix
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum(axis=1, keepdims=True)
    k = design.n_truths
    moment, _ = moment_batch(design, counts.astype(np.int64))
    done = np.all(moment >= 0, axis=1) if P.shape[0] == k else np.zeros(len(counts), bool)
    pi = np.where(done[:, None], moment, 1.0 / k)
    active = ~done
    iterations = 0
    while np.any(active) and iterations < max_iterations:
        cur = pi[active]
        lam = cur @ P.T
        ratio = np.divide(counts[active], lam, out=np.zeros_like(lam), where=lam > 0)
        new = cur * (ratio @ P) / n[active]
        step = np.abs(new - cur).max(axis=1)
        pi[active] = new
        still = step > tol
        idx = np.flatnonzero(active)
        active[idx[~still]] = False
        iterations += 1
    return pi, iterations


def _fisher_covariance(design: Design, pi: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """Inverse Fisher information of the multinomial likelihood, mapped to all k categories."""
    P = design.matrix
    k = design.n_truths
    lam = P @ pi
    D = P[:, :-1] - P[:, -1:]  # d lam / d theta, theta = pi[:-1]
    w = np.divide(1.0, lam, out=np.zeros_like(lam), where=lam > 0)
    info = n * (D.T * w) @ D
    cov_theta = np.linalg.pinv(info)
    A = np.vstack([np.eye(k - 1), -np.ones((1, k - 1))])
    return np.asarray(A @ cov_theta @ A.T)
